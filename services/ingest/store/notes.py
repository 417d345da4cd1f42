"""Notes in the index: what it knows of each file, and replacing, marking, renaming and deleting notes.

A note and its chunks and links are replaced in one transaction: a crash leaves the old version or the new, never
half.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg
import numpy as np

from secondbrain.date_sources import MODIFIED
from secondbrain.ingest.note import WikiLink
from secondbrain.ingest.note_dates import DateSpan, modified_day


@dataclass(frozen=True)
class IndexedFile:
    """What the index knows of a file, enough to decide whether it changed."""

    id: int
    path: str
    content_hash: str
    mtime: datetime | None
    size: int
    status: str


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
    date: DateSpan | None = None
    # The PDF pages (or slides) the chunk's text comes from; None for a note's chunks.
    page_start: int | None = None
    page_end: int | None = None


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
    # The file line the body starts on, after the front matter.
    body_start_line: int = 1
    chunks: list[ChunkRow] = field(default_factory=list)
    date: DateSpan | None = None


def to_datetime(timestamp: float) -> datetime:
    """A file's modification time (seconds since the epoch) as the index stores it."""
    return datetime.fromtimestamp(timestamp, UTC)


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
                                     status, status_reason, indexed_at, updated_at, body_start_line,
                                     date_start, date_end, date_source)
            VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8, $9, $10, $11,
                    CASE WHEN $10 = 'indexed' THEN now() END, now(), $12, $13, $14, $15)
            ON CONFLICT (path) DO UPDATE SET
                title = EXCLUDED.title, body = EXCLUDED.body, body_start_line = EXCLUDED.body_start_line,
                frontmatter = EXCLUDED.frontmatter, date_start = EXCLUDED.date_start, date_end = EXCLUDED.date_end,
                date_source = EXCLUDED.date_source,
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
            note.body_start_line,
            note.date.start if note.date else None,
            note.date.end if note.date else None,
            note.date.source if note.date else "",
        )
        await connection.execute("DELETE FROM vault_chunks WHERE file_id = $1", file_id)
        await connection.execute("DELETE FROM vault_links WHERE file_id = $1", file_id)
        if note.chunks:
            columns = [
                "file_id",
                "chunk_index",
                "heading_path",
                "start_line",
                "end_line",
                "content",
                "context",
                "token_count",
                "embedding",
                "date_start",
                "date_end",
                "date_source",
            ]
            records = [
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
                    c.date.start if c.date else None,
                    c.date.end if c.date else None,
                    c.date.source if c.date else "",
                )
                for c in note.chunks
            ]
            # Pages only where there are some (an attachment's chunks): a note's are NULL, the columns' default.
            if any(c.page_start is not None for c in note.chunks):
                columns += ["page_start", "page_end"]
                records = [(*record, c.page_start, c.page_end) for record, c in zip(records, note.chunks, strict=True)]
            await connection.copy_records_to_table("vault_chunks", columns=columns, records=records)
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
    """Record a file's new size and mtime after its content was found unchanged; a note dated by its modification
    time, and its passages dated so, move to the new day."""
    day = modified_day(mtime)
    async with connection.transaction():
        file_id = await connection.fetchval(
            """
            UPDATE vault_files SET size_bytes = $2, mtime = $3,
                date_start = CASE WHEN date_source = $5 THEN $4 ELSE date_start END,
                date_end = CASE WHEN date_source = $5 THEN $4 ELSE date_end END
            WHERE path = $1 RETURNING id
            """,
            path,
            size,
            mtime,
            day,
            MODIFIED,
        )
        if file_id is not None:
            await connection.execute(
                "UPDATE vault_chunks SET date_start = $2, date_end = $2 WHERE file_id = $1 AND date_source = $3",
                file_id,
                day,
                MODIFIED,
            )


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


async def forget_note(connection: asyncpg.Connection, path: str, reason: str, mtime: datetime) -> None:
    """Remove what is stored of a path that is no longer a note (it became a link out of the vault, say), keeping a
    row that says why, so status shows it; both in one transaction."""
    async with connection.transaction():
        await delete_notes(connection, [path])
        await mark_failed(connection, path, reason, 0, mtime)


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
