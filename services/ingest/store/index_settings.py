"""What every stored row was made with: the embedding model of the vectors, the text search configuration of the
tsvectors, the chunker's version of the chunks. Changing one rewrites (or marks for rewriting) what depends on it, in
the same transaction, so nothing stored is ever compared with what another setting made."""

from __future__ import annotations

import asyncpg

from secondbrain.db.embedding_model import ModelRecord
from secondbrain.errors import ConfigError


async def switch_model(connection: asyncpg.Connection, model: ModelRecord) -> None:
    """Record a new embedding model and drop every vector of the old one, together, so none is ever compared."""
    async with connection.transaction():
        await connection.execute("UPDATE vault_chunks SET embedding = NULL WHERE embedding IS NOT NULL")
        await connection.execute("UPDATE vault_files SET status = 'pending' WHERE status = 'indexed'")
        await connection.execute(
            """
            INSERT INTO embedding_model (singleton, provider, name, dimension) VALUES (true, $1, $2, $3)
            ON CONFLICT (singleton) DO UPDATE SET provider = EXCLUDED.provider, name = EXCLUDED.name,
                dimension = EXCLUDED.dimension, updated_at = now()
            """,
            model.provider,
            model.name,
            model.dimension,
        )


async def ensure_text_search_config(connection: asyncpg.Connection, name: str) -> bool:
    """Make `name` the text search configuration; when it changes, recompute every tsvector and the BM25 tables.
    Returns whether it changed."""
    if await connection.fetchval("SELECT 1 FROM pg_ts_config WHERE cfgname = $1", name) is None:
        raise ConfigError(
            f"secondbrain.json: search.text_search_config: PostgreSQL has no text search configuration {name!r}; "
            "'english' and 'simple' always exist"
        )
    async with connection.transaction():
        current = await connection.fetchval("SELECT text_search_config::text FROM search_config FOR UPDATE")
        if current == name:
            return False
        await connection.execute("UPDATE search_config SET text_search_config = $1::regconfig", name)
        await connection.execute("SELECT secondbrain_rebuild_lexical_index()")
    return True


async def ensure_chunking(connection: asyncpg.Connection, version: int) -> bool:
    """Record the chunker's `version`; when the index was chunked by another, mark every indexed note pending, so
    the sync reads and chunks it again (an index from before versions were recorded was chunked by version 1).
    Returns whether it changed."""
    async with connection.transaction():
        current = await connection.fetchval("SELECT version FROM chunking FOR UPDATE")
        if current == version:
            return False
        has_notes = await connection.fetchval("SELECT EXISTS (SELECT 1 FROM vault_files)")
        await connection.execute(
            """
            INSERT INTO chunking (singleton, version) VALUES (true, $1)
            ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, updated_at = now()
            """,
            version,
        )
        if not has_notes:
            return False
        await connection.execute("UPDATE vault_files SET status = 'pending' WHERE status = 'indexed'")
    return True
