"""The statements of related notes (GetRelatedNotes): the notes nearest by meaning to one note's passages, through the
HNSW index, and the notes it shares links and tags with or is linked with. How they are weighed is
`secondbrain.retrieve.related`."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from secondbrain.retrieve.store.note_reads import READABLE
from secondbrain.retrieve.store.statement import Params, fetch, link_names, names_any

# The dimensions with an HNSW index (migration 0001); another is compared by an exact scan, so fewer passages ask.
INDEXED_DIMENSIONS = frozenset({384, 768, 1024, 1536})
UNINDEXED_SOURCES = 4
# Each sampled passage's HNSW scan keeps this many candidates (`hnsw.ef_search`; 100 for a question's search). Twice
# the neighbours it returns: related notes need the near ones, not the exact top 20 a question's ranking does, and 12
# scans a call make it the cost that counts. On bench/reader.py's index (100,000 random 384-d vectors, an HNSW graph's
# worst case) on the 2 loaded cores, the statement's p50 with 16 passages went from 80 ms at 100 to 63 ms at 40, and
# with 8 passages at 40 to 28 ms (measured once by hand; bench/reader.py gives the figures as configured).
EF_SEARCH = 40
# Notes related only by a shared tag or a shared link are at most this many (a tag such as #daily is on thousands of
# notes): the most telling first, by the weights below.
MAX_TAG_OR_LINK_NOTES = 200


@dataclass(frozen=True)
class NoteIdentity:
    id: int
    path: str
    title: str
    tags: list[str]


@dataclass(frozen=True)
class Vectors:
    """What the note has to compare by meaning: its chunks, and how many of them have a vector of `dimension`."""

    chunks: int
    embedded: int


@dataclass(frozen=True)
class NearNote:
    """Another note by meaning: its chunk nearest to any of the note's sampled chunks, and how many of those sampled
    chunks had it among their nearest."""

    path: str
    title: str
    similarity: float
    heading_path: list[str]
    start_line: int
    end_line: int
    sources: int
    sampled: int


@dataclass(frozen=True)
class LinkedNote:
    """Another note by links and tags. The weights are sums over the shared links (tags) of 1 / log2(1 + n), n the
    notes linking to that note (carrying that tag), the note asked about included: a link both make to a hub most
    notes link to, or a tag half the vault carries, says little."""

    path: str
    title: str
    linked_from_note: bool
    links_to_note: bool
    shared_links: list[str]
    link_weight: float
    shared_tags: list[str]
    tag_weight: float


async def note_identity(connection: asyncpg.Connection, path: str) -> NoteIdentity | None:
    row = await connection.fetchrow(
        f"SELECT id, path, title, tags FROM vault_files f WHERE path = $1 AND {READABLE}", path
    )
    return None if row is None else NoteIdentity(row["id"], row["path"], row["title"], list(row["tags"]))


async def vectors(connection: asyncpg.Connection, file_id: int, dimension: int) -> Vectors:
    row = await connection.fetchrow(
        """
        SELECT count(*) AS chunks, count(*) FILTER (WHERE vector_dims(embedding) = $2) AS embedded
        FROM vault_chunks WHERE file_id = $1
        """,
        file_id,
        dimension,
    )
    assert row is not None
    return Vectors(int(row["chunks"]), int(row["embedded"]))


# For each sampled chunk of the note, its `per_source` nearest chunks of other notes, by the HNSW index: the LATERAL
# subquery's ORDER BY and WHERE are the partial index's expression and predicate, with the outer chunk's vector as the
# query, so each is one index scan (`fetch` sets the iterative scan, which walks on past the note's own chunks, its
# nearest). Never all pairs: sampled x per_source rows, rolled up to notes. The sample is spread over the note (every
# n-th chunk in order), so a long note's later sections count as much as its first.
_NEAREST = """
    WITH own AS MATERIALIZED (
        SELECT c.embedding::vector({dim}) AS embedding, row_number() OVER (ORDER BY c.chunk_index) - 1 AS position,
               count(*) OVER () AS total
        FROM vault_chunks c WHERE c.file_id = {me} AND vector_dims(c.embedding) = {dim}
    ),
    sampled AS MATERIALIZED (
        SELECT embedding, position FROM own
        WHERE position % greatest(ceil(total::float8 / {sources})::int, 1) = 0
        ORDER BY position LIMIT {sources}
    ),
    neighbours AS (
        SELECT s.position AS source, near.id, near.file_id, near.similarity
        FROM sampled s
        CROSS JOIN LATERAL (
            SELECT c.id, c.file_id, 1 - (c.embedding::vector({dim}) <=> s.embedding) AS similarity
            FROM vault_chunks c
            WHERE vector_dims(c.embedding) = {dim} AND c.file_id <> {me}
            ORDER BY c.embedding::vector({dim}) <=> s.embedding
            LIMIT {per_source}
        ) near
    ),
    rolled AS (
        SELECT file_id, max(similarity) AS similarity, count(DISTINCT source) AS sources
        FROM neighbours GROUP BY file_id
    ),
    best AS (
        SELECT DISTINCT ON (file_id) file_id, id FROM neighbours ORDER BY file_id, similarity DESC, id
    )
    SELECT f.path, f.title, r.similarity::float8 AS similarity, r.sources, c.heading_path, c.start_line, c.end_line,
           (SELECT count(*) FROM sampled) AS sampled
    FROM rolled r
    JOIN best b USING (file_id)
    JOIN vault_chunks c ON c.id = b.id
    JOIN vault_files f ON f.id = r.file_id
    WHERE {readable}
    ORDER BY r.similarity DESC, f.path
"""


async def nearest_notes(
    connection: asyncpg.Connection,
    file_id: int,
    dimension: int,
    *,
    sources: int,
    per_source: int,
    deadline: float | None,
) -> list[NearNote]:
    """The notes nearest by meaning to the note `file_id`'s chunks (its vectors of `dimension`), best first."""
    if dimension not in INDEXED_DIMENSIONS:
        sources = min(sources, UNINDEXED_SOURCES)
    p = Params()
    statement = p.statement(
        _NEAREST.format(
            dim=int(dimension),
            me=p.add(file_id),
            sources=p.add(sources),
            per_source=p.add(per_source),
            readable=READABLE,
        )
    )
    rows = await fetch(connection, statement, vector_scan=True, deadline=deadline, ef_search=EF_SEARCH)
    return [
        NearNote(
            r["path"], r["title"], float(r["similarity"]), list(r["heading_path"]), r["start_line"], r["end_line"],
            int(r["sources"]), int(r["sampled"]),
        )
        for r in rows
    ]  # fmt: skip


# Links are matched to notes by name (`link_names`, the names `link_resolves` matches) with equality: the notes this
# one links to are found in one pass over the notes (their names against this note's few targets), and the links to
# this note and to those notes in one pass over `vault_links`, hashed against the few names wanted, so nothing tests
# every link against every note.
_LINKED = """
    WITH me AS MATERIALIZED (
        SELECT f.id, ARRAY(SELECT DISTINCT lower(t) FROM unnest(f.tags) t) AS tags
        FROM vault_files f WHERE f.id = {me}
    ),
    my_targets AS MATERIALIZED (
        SELECT array_agg(DISTINCT lower(target)) AS names FROM vault_links WHERE file_id = {me}
    ),
    out_files AS MATERIALIZED (
        SELECT f.id AS file_id
        FROM vault_files f CROSS JOIN my_targets t
        WHERE t.names IS NOT NULL AND {resolves} AND f.id <> {me} AND {readable}
    ),
    -- The names that link to this note (target: this note) or to a note it links to (target: that note).
    wanted AS MATERIALIZED (
        SELECT f.id AS target, name
        FROM vault_files f CROSS JOIN LATERAL unnest({names}) AS name
        WHERE (f.id = {me} OR f.id IN (SELECT file_id FROM out_files)) AND name IS NOT NULL
    ),
    -- A semi-join first (hashed: the links' one pass), then the few links it keeps joined to their targets.
    matched AS MATERIALIZED (
        SELECT l.file_id, lower(l.target) AS name FROM vault_links l
        WHERE lower(l.target) IN (SELECT name FROM wanted)
    ),
    linking AS MATERIALIZED (
        SELECT DISTINCT m.file_id, w.target
        FROM matched m JOIN wanted w USING (name)
        WHERE m.file_id <> w.target
    ),
    in_files AS (
        SELECT file_id FROM linking WHERE target = {me}
    ),
    -- Every note's links to a note this one links to: the links they share, and how many notes make each.
    cited AS (
        SELECT file_id, target FROM linking WHERE target <> {me}
    ),
    shared_links AS (
        SELECT c.file_id, array_agg(t.path ORDER BY t.path) AS paths, sum(1 / log(2, 1 + d.notes)) AS weight
        FROM cited c
        JOIN (SELECT target, count(*) AS notes FROM cited GROUP BY target) d USING (target)
        JOIN vault_files t ON t.id = c.target
        WHERE c.file_id <> {me}
        GROUP BY c.file_id
        ORDER BY weight DESC, c.file_id
        LIMIT {most}
    ),
    -- Every note carrying one of this note's tags (in any case), and how many notes carry each.
    tagged AS MATERIALIZED (
        SELECT DISTINCT f.id AS file_id, lower(tag) AS tag
        FROM vault_files f CROSS JOIN me CROSS JOIN LATERAL unnest(f.tags) AS tag
        WHERE cardinality(me.tags) > 0 AND lower(tag) = ANY(me.tags) AND {readable}
    ),
    shared_tags AS (
        SELECT t.file_id, array_agg(t.tag ORDER BY d.notes, t.tag) AS tags, sum(1 / log(2, 1 + d.notes)) AS weight
        FROM tagged t
        JOIN (SELECT tag, count(*) AS notes FROM tagged GROUP BY tag) d USING (tag)
        WHERE t.file_id <> {me}
        GROUP BY t.file_id
        ORDER BY weight DESC, t.file_id
        LIMIT {most}
    ),
    related AS (
        SELECT file_id FROM out_files UNION SELECT file_id FROM in_files
        UNION SELECT file_id FROM shared_links UNION SELECT file_id FROM shared_tags
    )
    SELECT f.path, f.title,
           f.id IN (SELECT file_id FROM out_files) AS linked_from_note,
           f.id IN (SELECT file_id FROM in_files) AS links_to_note,
           coalesce(l.paths, '{{}}') AS shared_links, coalesce(l.weight, 0)::float8 AS link_weight,
           coalesce(t.tags, '{{}}') AS shared_tags, coalesce(t.weight, 0)::float8 AS tag_weight
    FROM related r
    JOIN vault_files f ON f.id = r.file_id
    LEFT JOIN shared_links l ON l.file_id = r.file_id
    LEFT JOIN shared_tags t ON t.file_id = r.file_id
    WHERE {readable}
    ORDER BY f.path
"""


async def linked_notes(connection: asyncpg.Connection, file_id: int, deadline: float | None) -> list[LinkedNote]:
    """The notes the note `file_id` links to or is linked from, and those it shares links or tags with."""
    p = Params()
    statement = p.statement(
        _LINKED.format(
            me=p.add(file_id),
            names=link_names("f"),
            resolves=names_any("f", "t.names"),
            most=p.add(MAX_TAG_OR_LINK_NOTES),
            readable=READABLE,
        )
    )
    rows = await fetch(connection, statement, vector_scan=False, deadline=deadline)
    return [
        LinkedNote(
            r["path"], r["title"], r["linked_from_note"], r["links_to_note"], list(r["shared_links"]),
            float(r["link_weight"]), list(r["shared_tags"]), float(r["tag_weight"]),
        )
        for r in rows
    ]  # fmt: skip
