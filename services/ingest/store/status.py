"""The index's status: counts, the embedding model, the last sync, and each file's state with why."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg

from secondbrain.date_sources import span_text
from secondbrain.db.embedding_model import ModelRecord, current_model
from secondbrain.db.sql import like_escape


@dataclass(frozen=True)
class FileStatusRow:
    path: str
    status: str
    reason: str
    chunks: int
    indexed_at: datetime | None
    date: str = ""
    date_source: str = ""


@dataclass(frozen=True)
class SyncRun:
    """The last sync started, however it ended: 'running', 'succeeded', 'failed', 'cancelled' or 'interrupted'."""

    status: str
    started_at: datetime
    finished_at: datetime | None
    error: str


@dataclass(frozen=True)
class IndexStatus:
    notes: int
    chunks: int
    embedded_chunks: int
    failed_notes: int
    model: ModelRecord | None
    last_sync: datetime | None
    vault_path: str
    files: list[FileStatusRow]
    # When a note was last written or a sync last deleted one: the index's last change, whoever made it.
    last_change: datetime | None = None
    last_run: SyncRun | None = None


async def index_status(connection: asyncpg.Connection, include_files: bool, path_prefix: str) -> IndexStatus:
    counts = await connection.fetchrow(
        """
        SELECT (SELECT count(*) FROM vault_files WHERE status <> 'failed' OR body <> '') AS notes,
               (SELECT count(*) FROM vault_chunks) AS chunks,
               (SELECT count(*) FROM vault_chunks WHERE embedding IS NOT NULL) AS embedded,
               (SELECT count(*) FROM vault_files WHERE status = 'failed') AS failed,
               greatest(
                   (SELECT max(indexed_at) FROM vault_files WHERE status <> 'failed'),
                   (SELECT max(finished_at) FROM ingest_runs
                    WHERE status = 'succeeded' AND coalesce((totals->>'deleted')::int, 0) > 0)
               ) AS last_change
        """
    )
    run = await connection.fetchrow(
        "SELECT finished_at, vault_path FROM ingest_runs WHERE status = 'succeeded' ORDER BY id DESC LIMIT 1"
    )
    last = await connection.fetchrow(
        "SELECT status, started_at, finished_at, error FROM ingest_runs ORDER BY id DESC LIMIT 1"
    )
    files: list[FileStatusRow] = []
    if include_files:
        rows = await connection.fetch(
            """
            SELECT f.path, f.status, f.status_reason, f.indexed_at, count(c.id) AS chunks,
                   f.date_start, f.date_end, f.date_source
            FROM vault_files f LEFT JOIN vault_chunks c ON c.file_id = f.id
            WHERE f.path LIKE $1 || '%'
            GROUP BY f.id ORDER BY f.path
            """,
            like_escape(path_prefix),
        )
        files = [
            FileStatusRow(
                r["path"], r["status"], r["status_reason"], r["chunks"], r["indexed_at"],
                span_text(r["date_start"], r["date_end"]), r["date_source"],
            )
            for r in rows
        ]  # fmt: skip
    return IndexStatus(
        notes=counts["notes"],
        chunks=counts["chunks"],
        embedded_chunks=counts["embedded"],
        failed_notes=counts["failed"],
        model=await current_model(connection),
        last_sync=run["finished_at"] if run else None,
        vault_path=run["vault_path"] if run else "",
        files=files,
        last_change=counts["last_change"],
        last_run=SyncRun(last["status"], last["started_at"], last["finished_at"], last["error"]) if last else None,
    )
