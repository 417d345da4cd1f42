"""The settings row: one per install, whose NULL columns mean "the default", so a changed default reaches an
install that never chose."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg

from secondbrain.chat.store.sql import STATEMENT_TIMEOUT, set_clause

# The columns of chat_settings a person can set, in the order of the API's Settings message.
SETTINGS_COLUMNS = (
    "provider", "model", "persona_id", "system_prompt", "passages", "alternates", "rerank", "rerank_model", "mode",
)  # fmt: skip


@dataclass(frozen=True)
class SettingsRow:
    """The stored settings; None is "the default" (resolved in settings.py, never here)."""

    provider: str | None = None
    model: str | None = None
    persona_id: str | None = None
    system_prompt: str | None = None
    passages: int | None = None
    alternates: bool | None = None
    rerank: bool | None = None
    rerank_model: str | None = None
    mode: str | None = None


def _settings(row: asyncpg.Record | None) -> SettingsRow:
    if row is None:  # the migration inserts the row; a database someone emptied by hand still reads as defaults
        return SettingsRow()
    return SettingsRow(**{column: row[column] for column in SETTINGS_COLUMNS})


async def fetch_settings(connection: asyncpg.Connection, *, for_update: bool = False) -> SettingsRow:
    """The settings row; `for_update` locks it until the transaction ends, so two updates do not interleave."""
    lock = " FOR UPDATE" if for_update else ""
    row = await connection.fetchrow(
        f"SELECT {', '.join(SETTINGS_COLUMNS)} FROM chat_settings WHERE singleton{lock}", timeout=STATEMENT_TIMEOUT
    )
    return _settings(row)


async def update_settings(connection: asyncpg.Connection, changes: Mapping[str, Any]) -> SettingsRow:
    """Set the given columns (None stores NULL, "the default") and return the row."""
    assignments, values = set_clause(changes, SETTINGS_COLUMNS, 1, "settings")
    row = await connection.fetchrow(
        f"""
        INSERT INTO chat_settings (singleton) VALUES (true)
        ON CONFLICT (singleton) DO UPDATE SET {assignments}
        RETURNING {", ".join(SETTINGS_COLUMNS)}
        """,
        *values,
        timeout=STATEMENT_TIMEOUT,
    )
    return _settings(row)
