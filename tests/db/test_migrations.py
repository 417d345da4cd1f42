"""Migrations: applied once, idempotent, safe when several services start at once, append-only."""

from __future__ import annotations

import asyncio
import dataclasses

import asyncpg
import pytest
from pgvector.asyncpg import register_vector

from secondbrain.db.migrate import load_migrations, migrate
from secondbrain.errors import FailedPrecondition
from secondbrain.ingest import store
from tests.db.test_lexical_index import assert_consistent, note

TABLES = {
    "schema_migrations",
    "embedding_model",
    "vault_files",
    "vault_links",
    "vault_chunks",
    "ingest_runs",
    "personas",
    "chat_settings",
    "chat_conversations",
    "chat_messages",
}


async def _tables(connection: asyncpg.Connection) -> set[str]:
    rows = await connection.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    return {row["tablename"] for row in rows}


async def test_fresh_database_gets_every_table_and_extension(empty_database: str) -> None:
    connection = await asyncpg.connect(empty_database)
    try:
        applied = await migrate(connection)
        assert [m.version for m in applied] == [m.version for m in load_migrations()]
        assert await _tables(connection) >= TABLES
        extensions = {row["extname"]: row["extversion"] for row in await connection.fetch("SELECT * FROM pg_extension")}
        assert "pg_trgm" in extensions
        major, minor = (int(part) for part in extensions["vector"].split(".")[:2])
        assert (major, minor) >= (0, 8)
    finally:
        await connection.close()


async def test_second_run_applies_nothing(empty_database: str) -> None:
    connection = await asyncpg.connect(empty_database)
    try:
        assert await migrate(connection)
        assert await migrate(connection) == []
        count = await connection.fetchval("SELECT count(*) FROM schema_migrations")
        assert count == len(load_migrations())
    finally:
        await connection.close()


async def test_concurrent_migrators_apply_each_file_once(empty_database: str) -> None:
    connections = [await asyncpg.connect(empty_database) for _ in range(4)]
    try:
        results = await asyncio.gather(*(migrate(connection) for connection in connections))
        applied = [migration.version for result in results for migration in result]
        assert sorted(applied) == [m.version for m in load_migrations()]
        assert await _tables(connections[0]) >= TABLES
    finally:
        for connection in connections:
            await connection.close()


async def test_changed_migration_is_refused(empty_database: str) -> None:
    connection = await asyncpg.connect(empty_database)
    try:
        await migrate(connection)
        edited = [dataclasses.replace(m, sql=m.sql + "\n-- edited") for m in load_migrations()]
        with pytest.raises(FailedPrecondition, match="changed after it was applied"):
            await migrate(connection, edited)
    finally:
        await connection.close()


async def test_failed_migration_leaves_no_trace(empty_database: str) -> None:
    connection = await asyncpg.connect(empty_database)
    try:
        await migrate(connection)
        broken = load_migrations()[-1]
        bad = dataclasses.replace(broken, version=9999, name="broken", sql="CREATE TABLE half (x int); SELECT 1/0;")
        with pytest.raises(asyncpg.DivisionByZeroError):
            await migrate(connection, [*load_migrations(), bad])
        assert "half" not in await _tables(connection)
        assert await connection.fetchval("SELECT count(*) FROM schema_migrations WHERE version = 9999") == 0
        # The lock was released: another migrator is not blocked.
        assert await asyncio.wait_for(migrate(connection), 5) == []
    finally:
        await connection.close()


_TSV = "SELECT f.path, c.tsv::text AS tsv FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id"


async def test_texts_with_long_runs_are_parsed_again_when_the_parser_guard_arrives(empty_database: str) -> None:
    """0012 reparses the texts it changes, and only those, keeping the BM25 tables exact."""
    connection = await asyncpg.connect(empty_database)
    try:
        await migrate(connection, [m for m in load_migrations() if m.version < 12])
        await register_vector(connection)
        await store.write_note(connection, note("Long.md", [f"plain words https://example.org/{'segment/' * 20}"]))
        await store.write_note(connection, note("Short.md", ["plain words only"]))
        old = {r["path"]: r["tsv"] for r in await connection.fetch(_TSV)}
        await migrate(connection)
        new = {r["path"]: r["tsv"] for r in await connection.fetch(_TSV)}
        assert new["Short.md"] == old["Short.md"]
        assert new["Long.md"] != old["Long.md"]
        assert new["Long.md"] == await connection.fetchval(
            "SELECT to_tsvector(secondbrain_ts_config(), secondbrain_parsable(c.context || ' ' || c.content))::text"
            " FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id WHERE f.path = 'Long.md'"
        )
        await assert_consistent(connection)
    finally:
        await connection.close()
