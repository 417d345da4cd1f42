"""Opening the database: the pgvector version gate, migrating at start unless a Job does it, and the redaction of
passwords in messages."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from secondbrain.config import Settings, load_settings
from secondbrain.db import Database
from secondbrain.db.database import check_pgvector, redact
from secondbrain.db.migrate import load_migrations, pending
from secondbrain.errors import FailedPrecondition


class FakeCatalog:
    """Answers the one catalog query check_pgvector makes, as a server with the given pgvector would."""

    def __init__(self, row: dict | None) -> None:
        self.row = row

    async def fetchrow(self, query: str) -> dict | None:
        assert "pg_available_extensions" in query
        return self.row


async def test_real_server_passes(db) -> None:
    async with db.pool.acquire() as connection:
        version = await check_pgvector(connection)
    assert tuple(int(part) for part in version.split(".")[:2]) >= (0, 8)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (None, "has no pgvector extension"),
        ({"default_version": "0.7.4", "installed_version": None}, "upgrade pgvector on the server"),
        ({"default_version": "0.8.1", "installed_version": "0.5.0"}, "ALTER EXTENSION vector UPDATE"),
    ],
)
async def test_missing_or_old_pgvector_is_refused(row: dict | None, message: str) -> None:
    with pytest.raises(FailedPrecondition, match=message):
        await check_pgvector(FakeCatalog(row))


async def test_installable_new_pgvector_passes() -> None:
    assert await check_pgvector(FakeCatalog({"default_version": "0.8.0", "installed_version": None})) == "0.8.0"


async def _pending_after_open(settings: Settings) -> int:
    db = await Database.open(settings)
    try:
        async with db.pool.acquire() as connection:
            return len(await pending(connection))
    finally:
        await db.close()


async def test_open_migrates_unless_a_migration_job_does(empty_database: str, tmp_path: Path) -> None:
    settings = load_settings(DATABASE_URL=empty_database, data_dir=tmp_path, migrate_on_start=False)
    # Left to a Job that has not run: refused with what to do, and nothing applied.
    with pytest.raises(FailedPrecondition, match="run `secondbrain migrate`"):
        await Database.open(settings)
    connection = await asyncpg.connect(empty_database)
    try:
        assert len(await pending(connection)) == len(load_migrations())
    finally:
        await connection.close()
    assert await _pending_after_open(settings.model_copy(update={"migrate_on_start": True})) == 0
    # Once migrated, a process that does not migrate opens it.
    assert await _pending_after_open(settings) == 0


def test_redact_hides_only_the_password() -> None:
    assert redact("postgresql://me:s3cret@db:5432/notes") == "postgresql://me:***@db:5432/notes"
    assert redact("postgresql://me@db/notes") == "postgresql://me@db/notes"
    assert redact("postgresql://postgres:@/postgres?host=/tmp/x") == "postgresql://postgres:@/postgres?host=/tmp/x"


async def _session_after_release(settings: Settings, *, session_state: bool) -> tuple[str, bool]:
    """What a one-connection pool's next user finds after the last one set a session variable and left a transaction
    open: the variable's value, and whether a transaction is still open."""
    db = await Database.open(settings.model_copy(update={"db_pool_max_size": 1}), session_state=session_state)
    try:
        async with db.pool.acquire() as connection:
            await connection.execute("SET application_name = 'left behind'")
            await connection.execute("BEGIN")
        async with db.pool.acquire() as connection:
            return await connection.fetchval("SHOW application_name"), connection.is_in_transaction()
    finally:
        await db.close()


async def test_a_pool_resets_sessions_unless_its_process_keeps_no_session_state(config) -> None:
    settings = config.settings
    default, open_transaction = await _session_after_release(settings, session_state=True)
    assert default != "left behind" and not open_transaction
    # Retrieve and chat keep nothing in a session, so their pools skip the reset round trip; a transaction left
    # open is still rolled back.
    assert await _session_after_release(settings, session_state=False) == ("left behind", False)
