"""The chat settings (one set per install) and the options they are chosen from.

The stored row holds only what a person chose; every NULL falls through to the defaults at read time: the provider
and model from the vault's `chat.default_provider`/`default_model` when that provider is available (else the first
available one, else the extractive one), the system prompt from `chat.system_prompt` or `prompts/system.md`, and the
retrieval knobs from the vault's `retrieve` section. So a changed default reaches everyone who never chose otherwise.

Updates follow FieldMask semantics: only the named fields change, and an empty mask changes every settable field.
An empty string (or 0 passages) stores "the default" rather than an empty value, so a full update from a form that
left a field blank resets it instead of failing. `reset_system_prompt` puts the default prompt back.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

import asyncpg

from secondbrain.chat import store
from secondbrain.db import Database
from secondbrain.errors import InvalidInput
from secondbrain.llm import ProviderCatalog, ProviderOption
from secondbrain.llm.presets import ModelPreset
from secondbrain.vault_config import ChatSection, RetrieveSection

DEFAULT_SYSTEM_PROMPT = (resources.files("secondbrain.chat") / "prompts" / "system.md").read_text(encoding="utf-8")

SETTABLE = store.SETTINGS_COLUMNS
MIN_PASSAGES, MAX_PASSAGES = 1, 50
MAX_SYSTEM_PROMPT_CHARS = 20_000
MAX_NAME_CHARS = 200
MODES = ("rag", "agent")


@dataclass(frozen=True)
class ResolvedSettings:
    """The settings in effect: every default resolved."""

    provider: str
    model: str
    persona_id: str
    system_prompt: str
    system_prompt_is_default: bool
    passages: int
    alternates: bool
    rerank: bool
    rerank_model: str
    mode: str


@dataclass(frozen=True)
class Persona:
    id: str
    name: str
    role: str
    source: str


@dataclass(frozen=True)
class SettingsChoices:
    """What the settings are chosen from (GetOptions): every provider, the personas, and the defaults."""

    providers: list[ProviderOption]
    personas: list[Persona]
    defaults: ResolvedSettings


def _text(name: str, value: Any, limit: int) -> str | None:
    """A string setting: trimmed, bounded, and "" as None (the default)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be text")
    value = value.strip()
    if len(value) > limit:
        raise InvalidInput(f"{name} is {len(value)} characters long; keep it under {limit}")
    return value or None


def check_mode(value: str) -> str:
    """A mode a request names: "rag" or "agent" ("" is the caller's default, returned as is)."""
    mode = value.strip().lower()
    if mode and mode not in MODES:
        raise InvalidInput(f"mode is {value!r}: choose 'rag' (one retrieval, then the answer) or 'agent' (the model "
                           "may also search and read the notes)")  # fmt: skip
    return mode


def _normalise(name: str, value: Any) -> Any:
    if name == "mode":
        return check_mode(value if isinstance(value, str) else "") or None
    if name == "system_prompt":
        return _text(name, value, MAX_SYSTEM_PROMPT_CHARS)
    if name in ("provider", "model", "persona_id", "rerank_model"):
        return _text(name, value, MAX_NAME_CHARS)
    if name == "passages":
        if value == 0:
            return None
        if not isinstance(value, int) or not MIN_PASSAGES <= value <= MAX_PASSAGES:
            raise InvalidInput(
                f"passages is {value}: choose {MIN_PASSAGES} to {MAX_PASSAGES} passages per answer, or 0 for the "
                "default"
            )
        return value
    return bool(value)  # alternates, rerank


class ChatSettings:
    """Reads, resolves and changes the settings row; lists the options."""

    def __init__(self, db: Database, catalog: ProviderCatalog, chat: ChatSection, retrieve: RetrieveSection) -> None:
        self.db = db
        self.catalog = catalog
        self.chat = chat
        self.retrieve = retrieve

    @property
    def default_system_prompt(self) -> str:
        """The vault's `chat.system_prompt` when it sets one, else the prompt shipped with secondbrain."""
        return self.chat.system_prompt or DEFAULT_SYSTEM_PROMPT

    def resolve(self, row: store.SettingsRow) -> ResolvedSettings:
        """The settings in effect for a stored row."""
        if row.provider is not None:
            provider = row.provider
            preset = self.catalog.presets.provider(provider)
            # A provider that a vault no longer defines keeps its name, so the turn's error can say which it was.
            model = row.model or (preset.default_model if preset is not None else "")
        else:
            choice = self.catalog.default()
            provider, model = choice.provider, row.model or choice.model
        return ResolvedSettings(
            provider=provider,
            model=model,
            persona_id=row.persona_id or "",
            system_prompt=row.system_prompt if row.system_prompt is not None else self.default_system_prompt,
            system_prompt_is_default=row.system_prompt is None,
            passages=row.passages or self.retrieve.passages,
            alternates=self.retrieve.alternates if row.alternates is None else row.alternates,
            rerank=self.retrieve.rerank if row.rerank is None else row.rerank,
            rerank_model=row.rerank_model or self.retrieve.reranker.model or "",
            mode=row.mode or self.chat.mode,
        )

    def defaults(self) -> ResolvedSettings:
        """What a fresh install starts with."""
        return self.resolve(store.SettingsRow())

    def model(self, provider: str, model: str) -> ModelPreset | None:
        """The preset of a model (its context window), None when the presets do not list it."""
        preset = self.catalog.presets.provider(provider)
        return preset.model(model) if preset is not None else None

    def with_model(self, settings: ResolvedSettings, provider: str, model: str) -> ResolvedSettings:
        """`settings` answering with `provider` (empty: theirs) and `model` (empty: the settings' own model for their
        provider, else the provider's default); raises InvalidInput naming the choices, as an update would."""
        provider = provider or settings.provider
        if not model:
            preset = self.catalog.presets.provider(provider)
            model = settings.model if provider == settings.provider else preset.default_model if preset else ""
        self.catalog.check(provider, model)
        return replace(settings, provider=provider, model=model)

    async def get(self) -> ResolvedSettings:
        async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
            return self.resolve(await store.fetch_settings(connection))

    async def update(
        self, values: Mapping[str, Any], fields: Collection[str], *, reset_system_prompt: bool = False
    ) -> ResolvedSettings:
        """Change the `fields` of the settings to `values` (every settable field when `fields` is empty).

        Raises InvalidInput naming the choices for an unknown provider, model or persona, and for values out of
        range. Changing the provider without naming a model takes that provider's default model.
        """
        names = list(dict.fromkeys(fields)) or list(SETTABLE)
        unknown = [name for name in names if name not in SETTABLE]
        if unknown:
            raise InvalidInput(
                f"update_mask names {', '.join(unknown)}, which cannot be set; settable fields: {', '.join(SETTABLE)}"
            )
        changes = {name: _normalise(name, values.get(name)) for name in names}
        prompt = changes.get("system_prompt")
        if reset_system_prompt or (prompt is not None and prompt.strip() == self.default_system_prompt.strip()):
            # The default sent back as it was shown (a form that saves every field) stays the default, so a later
            # improvement to it still reaches this install.
            changes["system_prompt"] = None
        async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection, connection.transaction():
            current = await store.fetch_settings(connection, for_update=True)
            if "provider" in changes and "model" not in changes and changes["provider"] != current.provider:
                changes["model"] = None  # the old provider's model means nothing to the new one
            merged = replace(current, **changes)
            if "provider" in changes or "model" in changes:
                effective = self.resolve(merged)
                self.catalog.check(effective.provider, effective.model)
                if merged.model is not None and merged.provider is None:
                    # A model belongs to a provider: pin the provider it was checked against, so a later change of
                    # the default provider cannot pair this model with another vendor.
                    changes["provider"] = effective.provider
            if changes.get("persona_id") is not None:
                await self._check_persona(connection, changes["persona_id"])
            row = await store.update_settings(connection, changes)
        return self.resolve(row)

    async def _check_persona(self, connection: asyncpg.Connection, persona_id: str) -> None:
        if await store.get_persona(connection, persona_id) is None:
            known = ", ".join(p.id for p in await store.list_personas(connection))
            raise InvalidInput(f"unknown persona {persona_id!r}; choose one of: {known}")

    async def check_persona(self, persona_id: str) -> None:
        """Raise InvalidInput naming the personas unless `persona_id` is one."""
        async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
            await self._check_persona(connection, persona_id)

    async def options(self) -> SettingsChoices:
        """Every provider (available or not, and what would make it available), the personas, the defaults."""
        async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
            rows = await store.list_personas(connection)
        personas = [Persona(row.id, row.name, row.role, row.source) for row in rows]
        return SettingsChoices(providers=self.catalog.options(), personas=personas, defaults=self.defaults())
