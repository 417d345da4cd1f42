"""Reading chunks once they are ranked: the winners with their neighbours, and the best chunk of each linked note."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

import asyncpg

from secondbrain.date_sources import MODIFIED
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.store.statement import Params, deadline_after, fetch, link_resolves


@dataclass(frozen=True)
class ChunkRow:
    id: int
    file_id: int
    chunk_index: int
    heading_path: list[str]
    start_line: int
    end_line: int
    content: str
    token_count: int
    path: str
    title: str
    date_start: date | None = None
    date_end: date | None = None
    date_source: str = ""
    # The pages (an attachment's) the chunk comes from; None for a note's.
    page_start: int | None = None
    page_end: int | None = None


async def chunks_around(
    connection: asyncpg.Connection,
    winners: Sequence[tuple[int, int]],
    radius: int,
    statement_timeout: float | None = None,
    dated: Filters | None = None,
) -> list[ChunkRow]:
    """The chunks within `radius` of each (file_id, chunk_index) winner, the winners included, in one query; with
    `dated`, only the neighbours dated within its date range."""
    if not winners:
        return []
    p = Params()
    file_ids, indexes = p.add([file_id for file_id, _ in winners]), p.add([index for _, index in winners])
    radius_p = p.add(radius)
    in_range = "true"
    if dated is not None and (dated.date_from or dated.date_to):
        in_range = p.filters(Filters(date_from=dated.date_from, date_to=dated.date_to), "f", "c")
    statement = p.statement(f"""
        SELECT c.id, c.file_id, c.chunk_index, c.heading_path, c.start_line, c.end_line, c.content, c.token_count,
               f.path, f.title, c.date_start, c.date_end, c.date_source, c.page_start, c.page_end
        FROM unnest({file_ids}::bigint[], {indexes}::int[]) AS w(file_id, chunk_index)
        JOIN vault_chunks c
          ON c.file_id = w.file_id AND c.chunk_index BETWEEN w.chunk_index - {radius_p} AND w.chunk_index + {radius_p}
        JOIN vault_files f ON f.id = c.file_id
        WHERE c.chunk_index = w.chunk_index OR ({in_range})
        """)
    rows = await fetch(connection, statement, vector_scan=False, deadline=deadline_after(statement_timeout))
    unique = {row["id"]: row for row in rows}
    return [
        ChunkRow(
            r["id"],
            r["file_id"],
            r["chunk_index"],
            list(r["heading_path"]),
            r["start_line"],
            r["end_line"],
            r["content"],
            r["token_count"],
            r["path"],
            r["title"],
            r["date_start"],
            r["date_end"],
            r["date_source"],
            r["page_start"],
            r["page_end"],
        )
        for r in unique.values()
    ]


async def linked_candidates(
    connection: asyncpg.Connection,
    file_ids: Sequence[int],
    query: str,
    filters: Filters,
    statement_timeout: float | None = None,
) -> list[tuple[int, int, int]]:
    """For notes linked from `file_ids` (by path, file name, title or alias), each one's best chunk for the query
    (by lexical overlap, else its first): (chunk_id, file_id, chunk_index), in link order."""
    if not file_ids:
        return []
    p = Params()
    sources, query_p, limit = p.add(list(file_ids)), p.add(query), p.add(len(file_ids) * 3)
    statement = p.statement(f"""
        WITH targets AS (
            -- The winners' order first, then each winner's link order.
            SELECT f.id, min(array_position({sources}::bigint[], l.file_id) * 100000 + l.ordinal) AS position
            FROM vault_links l
            JOIN vault_files f ON {link_resolves("f", "l")}
            WHERE l.file_id = ANY({sources}::bigint[]) AND NOT (f.id = ANY({sources}::bigint[]))
              AND {p.filters(filters, "f")}
            GROUP BY f.id
        )
        SELECT best.id, best.file_id, best.chunk_index
        FROM targets t
        CROSS JOIN LATERAL (
            SELECT c.id, c.file_id, c.chunk_index FROM vault_chunks c
            WHERE c.file_id = t.id
            ORDER BY ts_rank(c.tsv, plainto_tsquery(secondbrain_ts_config(), secondbrain_parsable({query_p}))) DESC,
                     c.chunk_index
            LIMIT 1
        ) best
        ORDER BY t.position
        LIMIT {limit}
        """)
    rows = await fetch(connection, statement, vector_scan=False, deadline=deadline_after(statement_timeout))
    return [(r["id"], r["file_id"], r["chunk_index"]) for r in rows]


async def chunk_dates(
    connection: asyncpg.Connection, chunk_ids: Sequence[int], statement_timeout: float | None = None
) -> dict[int, tuple[date, date, bool]]:
    """Each chunk's (first day, last day, whether the note itself dates it: its name, front matter or a dated heading,
    not its file's modification time), by id; chunks not dated yet are left out."""
    if not chunk_ids:
        return {}
    p = Params()
    ids = p.add(list(chunk_ids))
    statement = p.statement(f"""
        SELECT id, date_start, date_end, date_source <> {p.add(MODIFIED)} AS own FROM vault_chunks
        WHERE id = ANY({ids}::bigint[]) AND date_start IS NOT NULL AND date_end IS NOT NULL
        """)
    rows = await fetch(connection, statement, vector_scan=False, deadline=deadline_after(statement_timeout))
    return {row["id"]: (row["date_start"], row["date_end"], bool(row["own"])) for row in rows}


async def chunk_contents(
    connection: asyncpg.Connection, chunk_ids: Sequence[int], statement_timeout: float | None = None
) -> dict[int, str]:
    """Each chunk's stored content (its `Title > Heading` line, a blank line, its text), by id."""
    if not chunk_ids:
        return {}
    p = Params()
    ids = p.add(list(chunk_ids))
    statement = p.statement(f"SELECT id, content FROM vault_chunks WHERE id = ANY({ids}::bigint[])")
    rows = await fetch(connection, statement, vector_scan=False, deadline=deadline_after(statement_timeout))
    return {row["id"]: row["content"] for row in rows}
