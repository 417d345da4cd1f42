"""Which embedding model made the stored vectors: one row, read by retrieve (to refuse comparing a query vector with
vectors of another model) and by ingest (which writes it, in `switch_model`, with the vectors it invalidates)."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg


@dataclass(frozen=True)
class ModelRecord:
    provider: str
    name: str
    dimension: int

    @property
    def identity(self) -> str:
        return f"{self.provider}:{self.name}"


async def current_model(connection: asyncpg.Connection) -> ModelRecord | None:
    row = await connection.fetchrow("SELECT provider, name, dimension FROM embedding_model")
    return None if row is None else ModelRecord(row["provider"], row["name"], row["dimension"])
