"""Reading what the index holds of notes, for the note tools: one note's body, a list of notes, a note's wikilinks
both ways. Only what ingest stored is read, never a file: a path the index does not hold is simply not found.

A note is readable once it has content in the index: indexed or waiting for its vectors, or failed after an earlier
version was indexed (that version stays, as it does for search). A file that failed before it was ever indexed has
nothing to read.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from secondbrain.date_sources import span_text
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.store.statement import Params, fetch, link_resolves

_READABLE = "(f.status <> 'failed' OR f.body <> '')"


@dataclass(frozen=True)
class StoredNote:
    path: str
    title: str
    body: str
    # The file line the body starts on; None for a note stored before it was recorded (until the next sync).
    body_start_line: int | None
    tags: list[str]
    aliases: list[str]


@dataclass(frozen=True)
class ListedNote:
    path: str
    title: str
    tags: list[str]
    # Lines in the body, and the file line it starts on (1 when not known yet).
    body_lines: int
    body_start_line: int
    # The days it is from ("2026-01-20", "2026-01-19..2026-01-25") and where that was read; "" not dated yet.
    date: str = ""
    date_source: str = ""

    @property
    def last_line(self) -> int:
        return self.body_start_line + self.body_lines - 1


@dataclass(frozen=True)
class StoredLink:
    # The note at the other end: the linked note (outgoing) or the linking one (backlinks); None when an outgoing
    # link names no indexed note.
    path: str | None
    target: str
    heading: str
    line: int
    is_embed: bool


async def get_note(connection: asyncpg.Connection, path: str) -> StoredNote | None:
    row = await connection.fetchrow(
        f"SELECT path, title, body, body_start_line, tags, aliases FROM vault_files f WHERE path = $1 AND {_READABLE}",
        path,
    )
    if row is None:
        return None
    return StoredNote(
        row["path"], row["title"], row["body"], row["body_start_line"], list(row["tags"]), list(row["aliases"])
    )


async def notes_named(connection: asyncpg.Connection, name: str, limit: int = 5) -> list[str]:
    """The readable notes `name` names as Obsidian resolves a wikilink (path with or without `.md`, file name, title
    or alias, in any case), by path: for a read given a note's wikilink form, or a path in the wrong case."""
    target = name[:-3] if name.lower().endswith(".md") else name
    rows = await connection.fetch(
        f"""
        SELECT f.path FROM vault_files f, (SELECT $1::text AS target) l
        WHERE {link_resolves("f", "l")} AND {_READABLE}
        ORDER BY f.path LIMIT $2
        """,
        target,
        limit,
    )
    return [row["path"] for row in rows]


async def list_notes(
    connection: asyncpg.Connection, filters: Filters, limit: int, newest_first: bool = False
) -> tuple[list[ListedNote], int]:
    """Up to `limit` notes the filters let through, by path (or newest first, by date), and how many there are in
    all."""
    p = Params()
    where = f"{_READABLE} AND {p.filters(filters, 'f')}"
    limit_p = p.add(limit)
    statement = p.statement(f"""
        SELECT path, title, tags,
               -- Lines as GetNote counts them: a final newline ends the last line rather than starting one.
               length(body) - length(replace(body, E'\\n', '')) + 1 - (body LIKE E'%\\n')::int AS body_lines,
               coalesce(body_start_line, 1) AS body_start_line, count(*) OVER () AS total,
               date_start, date_end, date_source
        FROM vault_files f
        WHERE {where}
        ORDER BY {"date_end DESC NULLS LAST, path" if newest_first else "path"}
        LIMIT {limit_p}
        """)
    rows = await fetch(connection, statement, vector_scan=False)
    notes = [
        ListedNote(
            r["path"], r["title"], list(r["tags"]), r["body_lines"] or 1, r["body_start_line"],
            span_text(r["date_start"], r["date_end"]), r["date_source"],
        )
        for r in rows
    ]  # fmt: skip
    if rows:
        return notes, int(rows[0]["total"])
    # Past the end of a short list (limit 0 is not asked for): count alone.
    count = Params()
    total = await connection.fetchval(
        f"SELECT count(*) FROM vault_files f WHERE {_READABLE} AND {count.filters(filters, 'f')}", *count.values
    )
    return notes, int(total)


async def note_links(connection: asyncpg.Connection, path: str) -> tuple[list[StoredLink], list[StoredLink]] | None:
    """A readable note's wikilinks in order (each with the note it names, if indexed) and the links to it from other
    notes (by linking note, then line); None when the index holds no such note."""
    file_id = await connection.fetchval(f"SELECT id FROM vault_files f WHERE path = $1 AND {_READABLE}", path)
    if file_id is None:
        return None
    outgoing = await connection.fetch(
        f"""
        SELECT l.target, l.heading, l.line, l.is_embed, named.path
        FROM vault_links l
        LEFT JOIN LATERAL (
            SELECT f.path FROM vault_files f WHERE {link_resolves("f", "l")} AND {_READABLE} ORDER BY f.path LIMIT 1
        ) named ON true
        WHERE l.file_id = $1
        ORDER BY l.ordinal
        """,
        file_id,
    )
    backlinks = await connection.fetch(
        f"""
        SELECT l.target, l.heading, l.line, l.is_embed, linking.path
        FROM vault_links l
        JOIN vault_files linking ON linking.id = l.file_id
        JOIN vault_files f ON f.id = $1
        WHERE l.file_id <> $1 AND {link_resolves("f", "l")}
        ORDER BY linking.path, l.line
        """,
        file_id,
    )
    return [_link(r) for r in outgoing], [_link(r) for r in backlinks]


def _link(row: asyncpg.Record) -> StoredLink:
    return StoredLink(row["path"], row["target"], row["heading"], row["line"], row["is_embed"])
