"""Syncs: one at a time per database, under an advisory lock, each recorded in `ingest_runs` with how it ended."""

from __future__ import annotations

import hashlib
import json

import asyncpg

# One index per database, so one sync at a time per database.
SYNC_LOCK_KEY = int.from_bytes(hashlib.sha256(b"secondbrain.ingest.sync").digest()[:8], "big") >> 1


async def try_lock_sync(connection: asyncpg.Connection) -> bool:
    return bool(await connection.fetchval("SELECT pg_try_advisory_lock($1)", SYNC_LOCK_KEY))


async def unlock_sync(connection: asyncpg.Connection) -> None:
    await connection.execute("SELECT pg_advisory_unlock($1)", SYNC_LOCK_KEY)


async def last_synced_vault(connection: asyncpg.Connection) -> str | None:
    """The folder the index was last synced from (however that sync ended), while it holds notes; else None."""
    return await connection.fetchval(
        """SELECT vault_path FROM ingest_runs WHERE EXISTS (SELECT 1 FROM vault_files) ORDER BY id DESC LIMIT 1"""
    )


# What an interrupted run's `error` says.
INTERRUPTED_ERROR = (
    "the ingest process running this sync stopped before it finished (killed, out of memory, or cut off from the "
    "database); the next sync picks up where it left off"
)


async def close_interrupted_runs(connection: asyncpg.Connection) -> int:
    """Mark every run still 'running' while no other session holds the sync lock as interrupted; returns how many.
    A sync holds the lock from before its run starts until after its end is recorded, so such a run belongs to a
    process that died (its session, and the lock with it, ended). A run that ends meanwhile is not touched: the
    update reads each row again once the sync's own update commits."""
    status = await connection.execute(
        """
        UPDATE ingest_runs SET status = 'interrupted', finished_at = now(), error = $2
        WHERE status = 'running' AND NOT EXISTS (
            SELECT 1 FROM pg_locks
            WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid() AND database = (
                SELECT oid FROM pg_database WHERE datname = current_database()
            ) AND classid = ($1::bigint >> 32)::oid AND objid = ($1::bigint & 4294967295)::oid AND objsubid = 1
        )
        """,
        SYNC_LOCK_KEY,
        INTERRUPTED_ERROR,
    )
    return int(status.split()[-1])


async def start_run(connection: asyncpg.Connection, vault_path: str) -> int:
    return int(await connection.fetchval("INSERT INTO ingest_runs (vault_path) VALUES ($1) RETURNING id", vault_path))


async def finish_run(
    connection: asyncpg.Connection, run_id: int, status: str, totals: dict[str, int], error: str = ""
) -> None:
    await connection.execute(
        "UPDATE ingest_runs SET finished_at = now(), status = $2, totals = $3::jsonb, error = $4 WHERE id = $1",
        run_id,
        status,
        json.dumps(totals),
        error,
    )
