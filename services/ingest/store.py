"""All of the ingest service's SQL, in one place.

The invariants it keeps: a note and its chunks and links are replaced in one transaction (a crash leaves the old
version or the new, never half); every stored vector was made by the model in `embedding_model` (a model switch
clears the old vectors in the same transaction that records the new model); syncs take turns under an advisory lock.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg
import numpy as np

from secondbrain.db.embedding_model import ModelRecord, current_model
from secondbrain.errors import ConfigError
from secondbrain.ingest.note import WikiLink

# One index per database, so one sync at a time per database.
SYNC_LOCK_KEY = int.from_bytes(hashlib.sha256(b"secondbrain.ingest.sync").digest()[:8], "big") >> 1


@dataclass(frozen=True)
class IndexedFile:
    """What the index knows of a file, enough to decide whether it changed."""

    id: int
    path: str
    content_hash: str
    mtime: datetime | None
    size: int
    status: str

    def looks_unchanged(self, size: int, mtime: float) -> bool:
        """Same size and modification time: unchanged without reading it (what rsync and git assume too)."""
        if self.mtime is None or self.status != "indexed":
            return False
        return self.size == size and abs(self.mtime.timestamp() - mtime) < 1e-6


@dataclass
class ChunkRow:
    index: int
    heading_path: Sequence[str]
    start_line: int
    end_line: int
    content: str
    context: str
    token_count: int
    embedding: np.ndarray | None


@dataclass
class NoteRow:
    path: str
    title: str
    body: str
    frontmatter: dict[str, Any]
    aliases: list[str]
    tags: list[str]
    content_hash: str
    mtime: datetime
    size: int
    status: str
    status_reason: str = ""
    links: list[WikiLink] = field(default_factory=list)
    chunks: list[ChunkRow] = field(default_factory=list)


def to_datetime(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


async def try_lock_sync(connection: asyncpg.Connection) -> bool:
    return bool(await connection.fetchval("SELECT pg_try_advisory_lock($1)", SYNC_LOCK_KEY))


async def unlock_sync(connection: asyncpg.Connection) -> None:
    await connection.execute("SELECT pg_advisory_unlock($1)", SYNC_LOCK_KEY)


_INDEXED_COLUMNS = "id, path, content_hash, mtime, size_bytes, status"


def _indexed(row: asyncpg.Record) -> IndexedFile:
    return IndexedFile(row["id"], row["path"], row["content_hash"], row["mtime"], row["size_bytes"], row["status"])


async def fetch_index(connection: asyncpg.Connection) -> dict[str, IndexedFile]:
    rows = await connection.fetch(f"SELECT {_INDEXED_COLUMNS} FROM vault_files")
    return {row["path"]: _indexed(row) for row in rows}


async def fetch_files(connection: asyncpg.Connection, paths: list[str]) -> dict[str, IndexedFile]:
    rows = await connection.fetch(f"SELECT {_INDEXED_COLUMNS} FROM vault_files WHERE path = ANY($1::text[])", paths)
    return {row["path"]: _indexed(row) for row in rows}


async def fetch_file(connection: asyncpg.Connection, path: str) -> IndexedFile | None:
    row = await connection.fetchrow(f"SELECT {_INDEXED_COLUMNS} FROM vault_files WHERE path = $1", path)
    return None if row is None else _indexed(row)


async def existing_vectors(connection: asyncpg.Connection, file_id: int) -> dict[tuple[str, str], np.ndarray]:
    """A note's current vectors keyed by (content, context): an unchanged chunk of an edited note keeps its vector."""
    rows = await connection.fetch(
        "SELECT content, context, embedding FROM vault_chunks WHERE file_id = $1 AND embedding IS NOT NULL", file_id
    )
    return {(row["content"], row["context"]): row["embedding"] for row in rows}


async def write_note(connection: asyncpg.Connection, note: NoteRow) -> int:
    """Replace the note, its chunks and its links in one transaction; returns the note's id."""
    async with connection.transaction():
        file_id = await connection.fetchval(
            """
            INSERT INTO vault_files (path, title, body, frontmatter, aliases, tags, content_hash, mtime, size_bytes,
                                     status, status_reason, indexed_at, updated_at)
            VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8, $9, $10, $11,
                    CASE WHEN $10 = 'indexed' THEN now() END, now())
            ON CONFLICT (path) DO UPDATE SET
                title = EXCLUDED.title, body = EXCLUDED.body, frontmatter = EXCLUDED.frontmatter,
                aliases = EXCLUDED.aliases, tags = EXCLUDED.tags, content_hash = EXCLUDED.content_hash,
                mtime = EXCLUDED.mtime, size_bytes = EXCLUDED.size_bytes, status = EXCLUDED.status,
                status_reason = EXCLUDED.status_reason, indexed_at = EXCLUDED.indexed_at, updated_at = now()
            RETURNING id
            """,
            note.path,
            note.title,
            note.body,
            json.dumps(note.frontmatter, default=str),
            note.aliases,
            note.tags,
            note.content_hash,
            note.mtime,
            note.size,
            note.status,
            note.status_reason,
        )
        await connection.execute("DELETE FROM vault_chunks WHERE file_id = $1", file_id)
        await connection.execute("DELETE FROM vault_links WHERE file_id = $1", file_id)
        if note.chunks:
            await connection.copy_records_to_table(
                "vault_chunks",
                columns=[
                    "file_id",
                    "chunk_index",
                    "heading_path",
                    "start_line",
                    "end_line",
                    "content",
                    "context",
                    "token_count",
                    "embedding",
                ],
                records=[
                    (
                        file_id,
                        c.index,
                        list(c.heading_path),
                        c.start_line,
                        c.end_line,
                        c.content,
                        c.context,
                        c.token_count,
                        c.embedding,
                    )
                    for c in note.chunks
                ],
            )
        if note.links:
            await connection.copy_records_to_table(
                "vault_links",
                columns=["file_id", "ordinal", "target", "heading", "alias", "is_embed", "line"],
                records=[
                    (file_id, ordinal, link.target, link.heading, link.alias, link.is_embed, link.line)
                    for ordinal, link in enumerate(note.links)
                ],
            )
    return int(file_id)


async def touch(connection: asyncpg.Connection, path: str, size: int, mtime: datetime) -> None:
    """Record a file's new size and mtime after its content was found unchanged."""
    await connection.execute("UPDATE vault_files SET size_bytes = $2, mtime = $3 WHERE path = $1", path, size, mtime)


async def mark_failed(connection: asyncpg.Connection, path: str, reason: str, size: int, mtime: datetime) -> None:
    """Record why a file is not indexed. A version indexed before stays searchable: nothing stored is lost."""
    await connection.execute(
        """
        INSERT INTO vault_files (path, title, body, content_hash, mtime, size_bytes, status, status_reason)
        VALUES ($1, $2, '', '', $3, $4, 'failed', $5)
        ON CONFLICT (path) DO UPDATE SET status = 'failed', status_reason = EXCLUDED.status_reason,
            mtime = EXCLUDED.mtime, size_bytes = EXCLUDED.size_bytes, updated_at = now()
        """,
        path,
        path.rsplit("/", 1)[-1].removesuffix(".md"),
        mtime,
        size,
        reason,
    )


async def delete_notes(connection: asyncpg.Connection, paths: Sequence[str]) -> int:
    """Delete notes (their chunks and links cascade); returns the chunks removed."""
    if not paths:
        return 0
    async with connection.transaction():
        chunks = await connection.fetchval(
            "SELECT count(*) FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id WHERE f.path = ANY($1)",
            list(paths),
        )
        await connection.execute("DELETE FROM vault_files WHERE path = ANY($1)", list(paths))
    return int(chunks)


async def rename_notes(connection: asyncpg.Connection, renames: dict[str, str]) -> None:
    """Move each note at an old path to its new one, with its chunks and vectors; where a note is already at the new
    path (or an earlier rename took it), the old one is deleted instead, so one note is left."""
    pairs = list(renames.items())
    async with connection.transaction():
        await connection.executemany(
            """
            UPDATE vault_files SET path = $2, updated_at = now()
            WHERE path = $1 AND NOT EXISTS (SELECT 1 FROM vault_files WHERE path = $2)
            """,
            pairs,
        )
        await connection.executemany("DELETE FROM vault_files WHERE path = $1", [(old,) for old, _ in pairs])


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


@dataclass(frozen=True)
class FileStatusRow:
    path: str
    status: str
    reason: str
    chunks: int
    indexed_at: datetime | None


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


async def index_status(connection: asyncpg.Connection, include_files: bool, path_prefix: str) -> IndexStatus:
    counts = await connection.fetchrow(
        """
        SELECT (SELECT count(*) FROM vault_files WHERE status <> 'failed' OR body <> '') AS notes,
               (SELECT count(*) FROM vault_chunks) AS chunks,
               (SELECT count(*) FROM vault_chunks WHERE embedding IS NOT NULL) AS embedded,
               (SELECT count(*) FROM vault_files WHERE status = 'failed') AS failed
        """
    )
    run = await connection.fetchrow(
        "SELECT finished_at, vault_path FROM ingest_runs WHERE status = 'succeeded' ORDER BY id DESC LIMIT 1"
    )
    files: list[FileStatusRow] = []
    if include_files:
        rows = await connection.fetch(
            """
            SELECT f.path, f.status, f.status_reason, f.indexed_at, count(c.id) AS chunks
            FROM vault_files f LEFT JOIN vault_chunks c ON c.file_id = f.id
            WHERE f.path LIKE $1 || '%'
            GROUP BY f.id ORDER BY f.path
            """,
            path_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_"),
        )
        files = [FileStatusRow(r["path"], r["status"], r["status_reason"], r["chunks"], r["indexed_at"]) for r in rows]
    return IndexStatus(
        notes=counts["notes"],
        chunks=counts["chunks"],
        embedded_chunks=counts["embedded"],
        failed_notes=counts["failed"],
        model=await current_model(connection),
        last_sync=run["finished_at"] if run else None,
        vault_path=run["vault_path"] if run else "",
        files=files,
    )


# The work queue (several ingest processes sharing one sync) ----------------------------------------------------------

QUEUE_CHANNEL = "secondbrain_ingest_queue"


@dataclass(frozen=True)
class QueueItem:
    id: int
    run_id: int
    vault_path: str
    path: str
    force: bool


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
        RETURNING id, run_id, vault_path, path, force
        """,
        worker,
        limit,
        lease_seconds,
        run_id,
    )
    items = [QueueItem(r["id"], r["run_id"], r["vault_path"], r["path"], r["force"]) for r in rows]
    return sorted(items, key=lambda item: item.id)


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
