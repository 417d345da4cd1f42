"""Which providers exist, where they live, their models and default models: `presets.json`, plus a vault's overrides.

The file ships with the package; a vault's `secondbrain.json` adds or overrides models under `chat.providers.<id>`
(and may define a whole new OpenAI-compatible provider there). Both are validated with pydantic, and every error
names the key to fix.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from secondbrain.errors import ConfigError

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


class ProviderPreset(_Strict):
    display_name: str = Field(min_length=1)
    protocol: Protocol
    base_url: str | None = None
    # An environment variable that, when set, replaces base_url (plus base_url_env_suffix): OLLAMA_URL, for one.
    base_url_env: str | None = None
    base_url_env_suffix: str = ""
    api_key_env: str | None = None
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
    base_url_env: str | None = None
    api_key_env: str | None = None
    requires_env: list[str] | None = None
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] | None = None
    default_model: str | None = None
    models: list[ModelPreset] = Field(default_factory=list)


class Presets(_Strict):
    providers: dict[str, ProviderPreset] = Field(min_length=1)

    def provider(self, provider_id: str) -> ProviderPreset | None:
        return self.providers.get(provider_id)


def _describe(error: ValidationError, prefix: str) -> str:
    return "\n".join(
        f"{prefix}{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}" for problem in error.errors()
    )


def load_presets(text: str | None = None) -> Presets:
    """The presets shipped with secondbrain (or `text`, for tests), validated."""
    source = "presets.json"
    if text is None:
        text = (resources.files("secondbrain.llm") / "presets.json").read_text(encoding="utf-8")
    try:
        return Presets.model_validate(json.loads(text))
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{source}: not valid JSON (line {error.lineno}, column {error.colno}): {error.msg}"
        ) from None
    except ValidationError as error:
        raise ConfigError(f"invalid {source}:\n" + _describe(error, "")) from None


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
        try:
            providers[provider_id] = ProviderPreset.model_validate(merged)
        except ValidationError as error:
            raise ConfigError(
                "invalid secondbrain.json:\n" + _describe(error, f"chat.providers.{provider_id}.")
            ) from None
    return Presets(providers=providers)
