"""The personas a conversation can answer as: the built-in assistant and those a vault defines."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import asyncpg

from secondbrain.chat.store.sql import STATEMENT_TIMEOUT


@dataclass(frozen=True)
class PersonaRow:
    id: str
    name: str
    role: str
    source: str
    definition: str


def _persona(row: asyncpg.Record) -> PersonaRow:
    return PersonaRow(row["id"], row["name"], row["role"], row["source"], row["definition"])


async def list_personas(connection: asyncpg.Connection) -> list[PersonaRow]:
    """Every persona: the built-in assistant first, then the rest by name."""
    rows = await connection.fetch(
        """
        SELECT id, name, role, source, definition FROM personas
        ORDER BY id = 'assistant' DESC, lower(name), id
        """,
        timeout=STATEMENT_TIMEOUT,
    )
    return [_persona(row) for row in rows]


async def get_persona(connection: asyncpg.Connection, persona_id: str) -> PersonaRow | None:
    row = await connection.fetchrow(
        "SELECT id, name, role, source, definition FROM personas WHERE id = $1", persona_id, timeout=STATEMENT_TIMEOUT
    )
    return _persona(row) if row is not None else None


async def conversation_persona(connection: asyncpg.Connection, conversation_id: uuid.UUID) -> PersonaRow | None:
    """The persona a conversation answers as; None for the default assistant (or one since removed)."""
    row = await connection.fetchrow(
        """
        SELECT p.id, p.name, p.role, p.source, p.definition
        FROM chat_conversations c JOIN personas p ON p.id = c.persona_id WHERE c.id = $1
        """,
        conversation_id,
        timeout=STATEMENT_TIMEOUT,
    )
    return _persona(row) if row is not None else None
