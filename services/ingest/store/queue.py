"""The work queue's rows: a sync's changed files, claimed by whichever ingest process gets there first.

A row goes queued -> claimed (by one worker, under a lease) -> done (with the file's outcome and a `done_seq` that the
sync follows). Enqueueing notifies `QUEUE_CHANNEL`, so every listening worker wakes.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

QUEUE_CHANNEL = "secondbrain_ingest_queue"


@dataclass(frozen=True)
class QueueItem:
    id: int
    run_id: int
    vault_path: str
    path: str
    force: bool
    claims: int = 1


@dataclass(frozen=True)
class FinishedItem:
    path: str
    outcome: str
    chunks: int
    embedded: int
    error: str
    warnings: tuple[str, ...]
    done_seq: int


async def enqueue(connection: asyncpg.Connection, run_id: int, vault_path: str, force: bool, paths: list[str]) -> None:
    """Queue `paths` for run `run_id` and wake every listening worker."""
    async with connection.transaction():
        await connection.execute(
            """
            INSERT INTO ingest_queue (run_id, vault_path, force, path)
            SELECT $1, $2, $3, path FROM unnest($4::text[]) AS path
            """,
            run_id,
            vault_path,
            force,
            paths,
        )
        await connection.execute("SELECT pg_notify($1, $2)", QUEUE_CHANNEL, str(run_id))


async def claim(
    connection: asyncpg.Connection, worker: str, limit: int, lease_seconds: float, run_id: int | None = None
) -> list[QueueItem]:
    """Claim up to `limit` queued rows (of `run_id`, or of any run), and rows whose claim outlived its lease. SKIP
    LOCKED lets concurrent claimers pass each other's rows instead of waiting, so no row goes to two of them."""
    rows = await connection.fetch(
        """
        UPDATE ingest_queue
        SET state = 'claimed', claimed_by = $1, claimed_at = now(), claims = claims + 1
        WHERE id IN (
            SELECT id FROM ingest_queue
            WHERE (state = 'queued' OR (state = 'claimed' AND claimed_at < now() - make_interval(secs => $3)))
              AND ($4::bigint IS NULL OR run_id = $4)
            ORDER BY id
            LIMIT $2
            FOR UPDATE SKIP LOCKED
        )
        RETURNING id, run_id, vault_path, path, force, claims
        """,
        worker,
        limit,
        lease_seconds,
        run_id,
    )
    items = [QueueItem(r["id"], r["run_id"], r["vault_path"], r["path"], r["force"], r["claims"]) for r in rows]
    return sorted(items, key=lambda item: item.id)


async def renew_claims(connection: asyncpg.Connection, worker: str, item_ids: list[int]) -> None:
    """Start the lease again on `worker`'s claims among `item_ids` that are not done."""
    await connection.execute(
        "UPDATE ingest_queue SET claimed_at = now() WHERE id = ANY($2) AND state = 'claimed' AND claimed_by = $1",
        worker,
        item_ids,
    )


async def queue_depth(connection: asyncpg.Connection) -> int:
    """Files queued or claimed by any sync and not done yet."""
    return await connection.fetchval("SELECT count(*) FROM ingest_queue WHERE state <> 'done'")


async def finish_item(
    connection: asyncpg.Connection,
    item_id: int,
    worker: str,
    outcome: str,
    chunks: int,
    embedded: int,
    error: str,
    warnings: list[str],
) -> bool:
    """Record a claimed row's outcome; False when the claim was lost (its lease ran out and another took it)."""
    status = await connection.execute(
        """
        UPDATE ingest_queue
        SET state = 'done', outcome = $3, chunks = $4, embedded = $5, error = $6, warnings = $7,
            done_seq = nextval('ingest_queue_done_seq')
        WHERE id = $1 AND state = 'claimed' AND claimed_by = $2
        """,
        item_id,
        worker,
        outcome,
        chunks,
        embedded,
        error,
        warnings,
    )
    return status != "UPDATE 0"


async def finished_since(connection: asyncpg.Connection, run_id: int, after: int) -> list[FinishedItem]:
    rows = await connection.fetch(
        """
        SELECT path, outcome, chunks, embedded, error, warnings, done_seq FROM ingest_queue
        WHERE run_id = $1 AND state = 'done' AND done_seq > $2
        ORDER BY done_seq
        """,
        run_id,
        after,
    )
    return [
        FinishedItem(
            r["path"], r["outcome"], r["chunks"], r["embedded"], r["error"], tuple(r["warnings"]), r["done_seq"]
        )
        for r in rows
    ]
