"""What suggested questions are drawn from (SuggestQuestions): the most recently changed notes, with their headings,
and a mark of the index's state, so the same index gives the same questions without drawing them again."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from secondbrain.date_sources import FILE_NAME
from secondbrain.retrieve.store.note_reads import READABLE
from secondbrain.retrieve.store.statement import Params, fetch


@dataclass(frozen=True)
class SourceNote:
    id: int
    path: str
    title: str
    tags: list[str]
    # The note's headings below its title, each once, in the order they first appear.
    headings: list[str]


async def index_mark(connection: asyncpg.Connection, deadline: float | None) -> tuple[object, ...]:
    """What changes whenever a note is written, renamed, deleted or embedded, or the embedding model changes: the
    last write, the notes' ids, how many are embedded, and the model's record."""
    statement = Params().statement("""
        SELECT max(updated_at) AS written, count(*) AS notes, sum(id) AS ids,
               count(*) FILTER (WHERE status = 'indexed') AS embedded,
               (SELECT updated_at FROM embedding_model) AS model
        FROM vault_files
        """)
    row = (await fetch(connection, statement, vector_scan=False, deadline=deadline))[0]
    return (row["written"], row["notes"], row["ids"], row["embedded"], row["model"])


async def recent_notes(connection: asyncpg.Connection, limit: int, deadline: float | None) -> list[SourceNote]:
    """Up to `limit` notes with passages, most recently changed first (then by path), with their headings. A note
    named by its day (a daily note) is left out: what it says is not in its name or headings, so a question drawn
    from them ("What did I write on 20 January?") says nothing a person would ask."""
    p = Params()
    statement = p.statement(f"""
        WITH recent AS (
            SELECT f.id, f.path, f.title, f.tags, coalesce(f.mtime, f.updated_at) AS changed
            FROM vault_files f
            WHERE {READABLE} AND f.date_source <> {p.add(FILE_NAME)}
              AND EXISTS (SELECT 1 FROM vault_chunks c WHERE c.file_id = f.id)
            ORDER BY changed DESC, f.path
            LIMIT {p.add(limit)}
        )
        SELECT r.id, r.path, r.title, r.tags,
               ARRAY(
                   SELECT heading FROM (
                       SELECT heading, min(c.chunk_index * 100 + position) AS first
                       FROM vault_chunks c
                       CROSS JOIN LATERAL unnest(c.heading_path) WITH ORDINALITY AS h(heading, position)
                       WHERE c.file_id = r.id
                       GROUP BY heading
                   ) headings ORDER BY first, heading
               ) AS headings
        FROM recent r
        ORDER BY r.changed DESC, r.path
        """)
    rows = await fetch(connection, statement, vector_scan=False, deadline=deadline)
    return [SourceNote(r["id"], r["path"], r["title"], list(r["tags"]), list(r["headings"])) for r in rows]
