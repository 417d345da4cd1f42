"""Which chat providers exist, their models and default models: `presets.json`, plus a vault's overrides.

Where a provider lives and its key variable come from the providers' table (`secondbrain.providers.endpoints`),
shared with embedding and rerank; `presets.json` says only what chat adds (protocol, models). The file ships with
the package; a vault's `secondbrain.json` adds or overrides models under `chat.providers.<id>` (and may define a
whole new OpenAI-compatible provider there, endpoint included). Both are validated with pydantic, and every error
names the key to fix.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from secondbrain.errors import ConfigError, describe_problems
from secondbrain.providers import Endpoint, endpoints
from secondbrain.providers.env_names import KeyVariable, ProviderVariable, UrlVariable, key_for_own_url

Protocol = Literal["anthropic", "openai", "extractive"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelPreset(_Strict):
    id: str = Field(min_length=1)
    display_name: str = ""
    context_window: int = Field(default=0, ge=0, description="Tokens; 0 when unknown.")

    @property
    def label(self) -> str:
        return self.display_name or self.id


class ProviderPreset(Endpoint):
    """A chat provider: its endpoint (display name, base URL, key variable) and what chat needs besides."""

    protocol: Protocol
    # The provider is available only when every one of these is set and non-empty.
    requires_env: list[str] = Field(default_factory=list)
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    default_model: str = Field(min_length=1)
    models: list[ModelPreset] = Field(min_length=1)

    @model_validator(mode="after")
    def _default_model_is_listed(self) -> ProviderPreset:
        ids = [model.id for model in self.models]
        if self.default_model not in ids:
            raise ValueError(f"default_model {self.default_model!r} is not one of its models: {', '.join(ids)}")
        if len(set(ids)) != len(ids):
            raise ValueError("a model id is listed twice")
        return self

    def model(self, model_id: str) -> ModelPreset | None:
        return next((model for model in self.models if model.id == model_id), None)


class ProviderOverride(_Strict):
    """`chat.providers.<id>` in secondbrain.json: every field optional; models are merged by id."""

    display_name: str | None = None
    protocol: Protocol | None = None
    base_url: str | None = None
    # Variables a vault may name only as what they are (`providers.env_names`): never another secret of this machine.
    base_url_env: UrlVariable = None
    api_key_env: KeyVariable = None
    requires_env: list[ProviderVariable] | None = None
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] | None = None
    default_model: str | None = None
    models: list[ModelPreset] = Field(default_factory=list)

    @model_validator(mode="after")
    def _own_key_for_own_url(self) -> ProviderOverride:
        key_for_own_url(self.base_url, self.api_key_env)
        return self


class Presets(_Strict):
    providers: dict[str, ProviderPreset] = Field(min_length=1)

    def provider(self, provider_id: str) -> ProviderPreset | None:
        return self.providers.get(provider_id)


def load_presets(text: str | None = None) -> Presets:
    """The presets shipped with secondbrain (or `text`, for tests), validated."""
    source = "presets.json"
    if text is None:
        text = (resources.files("secondbrain.llm") / "presets.json").read_text(encoding="utf-8")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{source}: not valid JSON (line {error.lineno}, column {error.colno}): {error.msg}"
        ) from None
    try:
        return Presets.model_validate(_with_endpoints(document))
    except ValidationError as error:
        raise ConfigError(f"invalid {source}:\n" + describe_problems(error)) from None


def _with_endpoints(document: Any) -> Any:
    """`document` with each provider's endpoint from the providers' table under what its entry says itself (the
    extractive provider, which has no endpoint, names itself). Anything malformed is left for validation to name."""
    providers = document.get("providers") if isinstance(document, dict) else None
    if not isinstance(providers, dict):
        return document
    table = endpoints()
    return {
        **document,
        "providers": {
            provider_id: {**table[provider_id].model_dump(), **entry}
            if provider_id in table and isinstance(entry, dict)
            else entry
            for provider_id, entry in providers.items()
        },
    }


def apply_overrides(presets: Presets, overrides: dict[str, ProviderOverride]) -> Presets:
    """`presets` with a vault's `chat.providers` merged in; errors name the `chat.providers...` key."""
    providers = dict(presets.providers)
    for provider_id, override in overrides.items():
        base = providers.get(provider_id)
        fields = override.model_dump(exclude_none=True, exclude={"models"})
        if base is None:
            merged = {**fields, "models": [m.model_dump() for m in override.models]}
            if "default_model" not in merged and override.models:
                merged["default_model"] = override.models[0].id
        else:
            models = {model.id: model for model in base.models}
            models.update({model.id: model for model in override.models})
            merged = {**base.model_dump(), **fields, "models": [m.model_dump() for m in models.values()]}
            if override.base_url is not None and override.api_key_env is None:
                # The built-in key does not follow the provider to a URL of the vault's (providers.env_names).
                merged["api_key_env"] = None
        try:
            providers[provider_id] = ProviderPreset.model_validate(merged)
        except ValidationError as error:
            raise ConfigError(
                "invalid secondbrain.json:\n" + describe_problems(error, prefix=f"chat.providers.{provider_id}.")
            ) from None
    return Presets(providers=providers)
