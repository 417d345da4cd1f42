"""The factory: which providers are available now, what the default is, and a ready ChatProvider for a choice.

A provider is available when every variable in its preset's `requires_env` is set (its API key; OLLAMA_URL for
Ollama). The extractive provider needs nothing and is the default only when no other provider is available.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from secondbrain.errors import ConfigError, FailedPrecondition, InvalidInput
from secondbrain.llm.base import ChatProvider
from secondbrain.llm.presets import (
    ModelPreset,
    Presets,
    ProviderOverride,
    ProviderPreset,
    apply_overrides,
    load_presets,
)
from secondbrain.providers import ProviderContext, RetryPolicy

if TYPE_CHECKING:  # config imports the presets of this package, so only the type may be imported here
    from secondbrain.config import Config

EXTRACTIVE = "extractive"


@dataclass(frozen=True)
class ProviderOption:
    id: str
    display_name: str
    available: bool
    unavailable_reason: str
    models: list[ModelPreset]
    default_model: str


@dataclass(frozen=True)
class Choice:
    provider: str
    model: str


class ProviderCatalog:
    def __init__(
        self,
        presets: Presets,
        env: Mapping[str, str] | None = None,
        *,
        default_provider: str | None = None,
        default_model: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.presets = presets
        self.env = os.environ if env is None else env
        self.retry = retry
        self._instances: dict[str, ChatProvider] = {}
        if default_provider is not None and presets.provider(default_provider) is None:
            known = ", ".join(presets.providers)
            raise ConfigError(
                f"secondbrain.json: chat.default_provider: unknown provider {default_provider!r}; known: {known}"
            )
        if default_model is not None:
            owner = presets.providers[default_provider] if default_provider else None
            if owner is None or owner.model(default_model) is None:
                raise ConfigError(
                    f"secondbrain.json: chat.default_model: {default_model!r} is not a model of "
                    f"{default_provider or 'chat.default_provider (which is not set)'}"
                )
        self.default_provider = default_provider
        self.default_model = default_model

    @classmethod
    def from_overrides(
        cls,
        providers: Mapping[str, ProviderOverride],
        env: Mapping[str, str] | None = None,
        *,
        default_provider: str | None = None,
        default_model: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> ProviderCatalog:
        """The shipped presets with a vault's `chat.providers` merged in."""
        presets = apply_overrides(load_presets(), dict(providers))
        return cls(presets, env, default_provider=default_provider, default_model=default_model, retry=retry)

    @classmethod
    def from_config(
        cls, config: Config, env: Mapping[str, str] | None = None, *, retry: RetryPolicy | None = None
    ) -> ProviderCatalog:
        chat = config.vault.chat
        return cls.from_overrides(
            chat.providers, env, default_provider=chat.default_provider, default_model=chat.default_model, retry=retry
        )

    def _missing_env(self, preset: ProviderPreset) -> list[str]:
        return [name for name in preset.requires_env if not self.env.get(name)]

    def options(self) -> list[ProviderOption]:
        options = []
        for provider_id, preset in self.presets.providers.items():
            missing = self._missing_env(preset)
            options.append(
                ProviderOption(
                    id=provider_id,
                    display_name=preset.display_name,
                    available=not missing,
                    unavailable_reason=f"set {' and '.join(missing)}" if missing else "",
                    models=list(preset.models),
                    default_model=preset.default_model,
                )
            )
        return options

    def available(self) -> list[str]:
        return [option.id for option in self.options() if option.available]

    def default(self) -> Choice:
        """The configured default when it is available; else the first available provider that has a model; else
        the extractive one."""
        available = self.available()
        if self.default_provider in available:
            preset = self.presets.providers[self.default_provider]
            return Choice(self.default_provider, self.default_model or preset.default_model)
        chosen = next((pid for pid in available if pid != EXTRACTIVE), EXTRACTIVE)
        return Choice(chosen, self.presets.providers[chosen].default_model)

    def check(self, provider_id: str, model: str) -> None:
        """Raise InvalidInput, naming the choices, unless `model` of `provider_id` can be used now."""
        preset = self.presets.provider(provider_id)
        if preset is None:
            raise InvalidInput(f"unknown provider {provider_id!r}; choose one of: {', '.join(self.available())}")
        missing = self._missing_env(preset)
        if missing:
            raise InvalidInput(
                f"provider {provider_id!r} is not available: set {' and '.join(missing)}; "
                f"available now: {', '.join(self.available())}"
            )
        if preset.model(model) is None:
            models = ", ".join(m.id for m in preset.models)
            raise InvalidInput(f"unknown model {model!r} for {provider_id}; choose one of: {models}")

    def context(self, provider_id: str) -> ProviderContext:
        return self.presets.providers[provider_id].context(provider_id, self.env)

    def provider(self, provider_id: str) -> ChatProvider:
        """A ready provider (one per id, reused: its SDK client pools connections)."""
        if provider_id in self._instances:
            return self._instances[provider_id]
        preset = self.presets.provider(provider_id)
        if preset is None:
            raise InvalidInput(f"unknown provider {provider_id!r}; choose one of: {', '.join(self.available())}")
        missing = self._missing_env(preset)
        if missing:
            raise FailedPrecondition(f"{preset.display_name} is not available: set {' and '.join(missing)}")
        instance: ChatProvider
        # Vendor modules import their SDKs; only the ones in use are imported.
        if preset.protocol == "anthropic":
            from secondbrain.llm.anthropic_provider import AnthropicProvider

            instance = AnthropicProvider(self.context(provider_id), retry=self.retry)
        elif preset.protocol == "openai":
            from secondbrain.llm.openai_provider import OpenAICompatibleProvider

            instance = OpenAICompatibleProvider(
                self.context(provider_id), max_tokens_param=preset.max_tokens_param, retry=self.retry
            )
        else:
            from secondbrain.llm.extractive import ExtractiveProvider

            # Quoting is a choice when a model provider could have answered, and the answer says which it is.
            instance = ExtractiveProvider(chosen=any(other != EXTRACTIVE for other in self.available()))
        self._instances[provider_id] = instance
        return instance
