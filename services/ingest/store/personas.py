"""The personas defined in the vault (`.claude/agents`), kept for the chat service beside the built-in ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg


@dataclass(frozen=True)
class PersonaRow:
    id: str
    name: str
    role: str
    definition: str
    source: str


async def replace_vault_personas(connection: asyncpg.Connection, personas: Sequence[PersonaRow]) -> None:
    """Make the personas defined in the vault exactly `personas`; built-in ones (no source) are untouched. A file
    that failed to read as a persona before is recorded as a failed file; now it reads, that record goes."""
    async with connection.transaction():
        await connection.execute("DELETE FROM vault_files WHERE path = ANY($1)", [p.source for p in personas])
        await connection.execute(
            "DELETE FROM personas WHERE source <> '' AND NOT (id = ANY($1))", [p.id for p in personas]
        )
        await connection.executemany(
            """
            INSERT INTO personas (id, name, role, definition, source) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, role = EXCLUDED.role,
                definition = EXCLUDED.definition, source = EXCLUDED.source, updated_at = now()
            """,
            [(p.id, p.name, p.role, p.definition, p.source) for p in personas],
        )
