"""Note-level search statements (the search box): lexical, vector and hybrid, each one SQL statement.

Units are whole notes. The lexical arm matches the note's weighted tsvector (`vault_files.tsv`: title A, aliases and
tags B, body D) with `websearch_to_tsquery`, so every typed word must match, quoted phrases and `-exclusions` work
and `or` alternates, and it also matches the query as a case-insensitive substring of the title, path or body (part
of a word, a path fragment, an identifier the stemmer mangles). The vector arm ranks chunks by cosine distance and
keeps each note's best chunk. Hybrid fuses the two rankings by reciprocal rank fusion in the same statement (no
Python fusion, one round trip).

Ranking (only the order is meaningful; scores of different modes are not comparable):

- lexical: ``tier + r / (r + 1)`` where ``r = ts_rank_cd(tsv, query) / (1 + ln(note length))`` with the default
  weights (A 1.0, B 0.4, C 0.2, D 0.1), and ``tier`` is 2 when the title carries the query (it contains the typed
  text, or every query term is in the title), 1 when the path contains the typed text or the aliases and tags
  carry every term, else 0. ``r / (r + 1)`` is below 1, so a title match always ranks above a path, alias or tag
  match, which ranks above a body-only match; within a tier the cover-density rank decides, and a substring-only
  match (part of a word) ranks below whole-word matches of the same tier. Ties go to the path, alphabetically.
- vector: the cosine similarity of the note's best chunk, ``1 - (embedding <=> query_vector)``.
- hybrid: ``sum over the arms of 1 / (RRF_K + rank in that arm)`` (`secondbrain.retrieve.fusion`), each arm ranked
  to ``max(2 * limit, 50)`` notes.
"""

from __future__ import annotations

import re
import time

import asyncpg
import numpy as np

from secondbrain.errors import Unavailable
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.fusion import rrf_sql
from secondbrain.retrieve.store.statement import (
    HNSW_EF_SEARCH,
    Params,
    Statement,
    exact_order,
    fetch,
    like_escape,
    seconds_left,
)

# How deep each arm ranks before fusion: a note ranked 40th by both arms should still be able to reach the top.
MIN_FUSION_DEPTH = 50
# Chunks fetched for every note returned by the vector arm. Several of a note's chunks are often among the nearest
# (they share its heading prefix and subject), and collapsing happens after the index scan's LIMIT.
CHUNKS_PER_NOTE = 4
MAX_CHUNK_CANDIDATES = 1_000
# pg_trgm takes trigrams from runs of letters and digits only. A query without three in a row ("ab", "C#", "%_%",
# "!!!") gives the trigram indexes nothing to look up, so its substring match would read every note: it is skipped.
_TRIGRAM_RUN = re.compile(r"[^\W_]{3}")
# A `"phrase"` or a `-word` means the user is writing search syntax, not text to find verbatim.
_SEARCH_SYNTAX = re.compile(r'"|(?:^|\s)-\w')

# In hybrid note search, a note the vector arm alone found (it does not contain the query's words) is listed only when
# its best chunk is at least this similar to the query: the vector arm always has neighbours, and without a floor a
# word one note contains listed every note of a small vault. Chosen by bench/search_floor.py (docs/benchmarks.md, "The
# search box's similarity floor"): 99% of the notes that neither hold a typed query's words nor answer it fall short of
# it on our own sets. With MiniLM, few notes that answer without the words reach it either: for a short typed query
# their similarity is barely above the unrelated notes', so such a list is labelled "related by meaning", not a match.
VECTOR_ONLY_FLOOR = 0.45

# ts_headline marks matches with characters that do not occur in notes (Unicode private use), so that a note's own
# `**bold**` is never mistaken for a match; note search turns them into highlight ranges (`NoteHit.highlights`).
MATCH_START, MATCH_STOP = "\ue000", "\ue001"
# A note found by its path alone has no matching chunk; its snippet is cut from the start of its body.
SOURCE_CHARS = 4_000
_HEADLINE_OPTIONS = (
    f'StartSel={MATCH_START}, StopSel={MATCH_STOP}, MaxWords=20, MinWords=8, MaxFragments=2, FragmentDelimiter=" … "'
)


def _substring_pattern(text: str) -> str | None:
    """The ILIKE pattern of the substring match, or None (no substring match) for a query the trigram indexes cannot
    look up, or one written in search syntax, whose literal text is not what the user is looking for."""
    if not _TRIGRAM_RUN.search(text) or _SEARCH_SYNTAX.search(text):
        return None
    return "%" + like_escape(text) + "%"


def _in_range(p: Params, filters: Filters) -> str:
    """A boolean SQL expression: the `vault_chunks` row `c` is dated within the filters' date range ("true" without
    one)."""
    if not (filters.date_from or filters.date_to):
        return "true"
    return p.filters(Filters(date_from=filters.date_from, date_to=filters.date_to), "f", "c")


def _lexical_ctes(p: Params, text: str, filters: Filters, depth: int) -> str:
    """CTEs `query` (the tsquery and the substring pattern) and `lexical_ranked` (id, score, rank), best `depth` notes.

    `query` is NOT MATERIALIZED so the planner substitutes its expressions: `f.tsv @@ <tsquery>` and
    `f.title ILIKE <pattern>` then compare an indexed column with a constant, and the four OR'ed conditions become a
    BitmapOr of the tsv GIN index and the three trigram GIN indexes. A NULL pattern (no substring match) folds away.

    With a date range, a note holds the words only where a passage of it dated within the range does (or its path
    or title does): a log whose January entry is in range and whose April entry has the words does not match.
    """
    where = p.filters(filters, "f")
    dated = ""
    if filters.date_from or filters.date_to:
        dated = f"""
          AND (f.title ILIKE q.pattern OR f.path ILIKE q.pattern OR EXISTS (
                SELECT 1 FROM vault_chunks c
                WHERE c.file_id = f.id AND {_in_range(p, filters)}
                  AND (c.tsv @@ q.tsq OR c.content ILIKE q.pattern)))"""
    query, pattern, depth_p = p.add(text), p.add(_substring_pattern(text)), p.add(depth)
    return f"""
    query AS NOT MATERIALIZED (
        SELECT websearch_to_tsquery(secondbrain_ts_config(), secondbrain_parsable({query})) AS tsq,
               {query}::text AS needle,
               {pattern}::text AS pattern
    ),
    lexical_scored AS (
        SELECT f.id, f.path,
               CASE WHEN f.title ILIKE q.pattern OR ts_filter(f.tsv, '{{a}}') @@ q.tsq THEN 2
                    WHEN f.path ILIKE q.pattern OR ts_filter(f.tsv, '{{b}}') @@ q.tsq THEN 1
                    ELSE 0
               END
               -- 1: divide by 1 + ln(length); 32: r / (r + 1), so the text rank stays below one tier.
               + ts_rank_cd(f.tsv, q.tsq, 1 | 32) AS score
        FROM vault_files f CROSS JOIN query q
        WHERE (f.tsv @@ q.tsq
               OR f.title ILIKE q.pattern OR f.path ILIKE q.pattern OR f.body ILIKE q.pattern)
          -- A file that failed before it was ever indexed has a title and no content: not a note to find.
          AND NOT (f.status = 'failed' AND f.body = '')
          AND {where}{dated}
    ),
    lexical_ranked AS (
        SELECT id, score, row_number() OVER (ORDER BY score DESC, path) AS rank
        FROM lexical_scored
        ORDER BY rank
        LIMIT {depth_p}
    )"""


def _vector_ctes(p: Params, vector: np.ndarray, filters: Filters, depth: int) -> str:
    """CTE `vector_ranked` (id, distance, rank, heading_path, content): the `depth` notes nearest the query vector,
    each by its best chunk.

    The ORDER BY repeats the partial index's expression and the WHERE its predicate, so the planner can use
    `vault_chunks_embedding_<dim>_idx`; the filter joins vault_files inside the scan, and the iterative scan (set by
    `fetch` for the statement's transaction) keeps reading the graph until enough chunks pass it. `nearest` is
    MATERIALIZED so the index scan's LIMIT is applied before collapsing to notes (pgvector's recommended shape for
    relaxed_order, which may return rows slightly out of order: they are re-sorted here).
    """
    dim = int(vector.shape[0])
    # The chunk itself within the date range, so a note's best chunk (its snippet and heading) is one of the days
    # asked for.
    where = p.filters(filters, "f", "c")
    vector_p = p.add(vector)
    candidates = p.add(min(max(depth * CHUNKS_PER_NOTE, HNSW_EF_SEARCH), MAX_CHUNK_CANDIDATES))
    depth_p = p.add(depth)
    return f"""
    nearest AS MATERIALIZED (
        SELECT c.file_id, c.heading_path, c.content, c.embedding::vector({dim}) <=> {vector_p} AS distance
        FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id
        WHERE vector_dims(c.embedding) = {dim}
          AND {where}
        ORDER BY {exact_order(f"c.embedding::vector({dim}) <=> {vector_p}", filters)}
        LIMIT {candidates}
    ),
    best_chunk AS (
        SELECT DISTINCT ON (file_id) file_id AS id, heading_path, content, distance
        FROM nearest
        ORDER BY file_id, distance
    ),
    vector_ranked AS (
        SELECT b.id, b.distance, b.heading_path, b.content,
               row_number() OVER (ORDER BY b.distance, f.path) AS rank
        FROM best_chunk b JOIN vault_files f ON f.id = b.id
        ORDER BY rank
        LIMIT {depth_p}
    )"""


# Every statement returns the same columns, which note search turns into a NoteHit: contains (the lexical arm found
# the note: it holds the query's words, or its text), headline (ts_headline, matches between MATCH_START and
# MATCH_STOP) and source (the text the headline is from, which the snippet is cut from) are NULL where the lexical arm
# did not match; chunk (the vector arm's best chunk) is NULL where the vector arm did not. Where the lexical arm
# matched, both come from the note's best matching chunk (`matched`), and so does the heading path, so a hit's label
# is the section its snippet is from; the start of the body only when no chunk holds a match (a note found by its
# path).
def _matched_chunk(in_range: str) -> str:
    """A LATERAL subquery `matched` (heading_path, text): the chunk of note `f` that best matches the query among
    those `in_range` lets through (the date range's), its text without the `Title > Heading` line ingest writes before
    a blank line."""
    return f"""
        LEFT JOIN LATERAL (
            SELECT c.heading_path,
                   CASE WHEN strpos(c.content, E'\\n\\n') > 0
                        THEN substr(c.content, strpos(c.content, E'\\n\\n') + 2) ELSE c.content END AS text
            FROM vault_chunks c
            WHERE c.file_id = f.id AND (c.tsv @@ q.tsq OR c.content ILIKE q.pattern) AND {in_range}
            ORDER BY ts_rank_cd(c.tsv, q.tsq) DESC, c.chunk_index
            LIMIT 1
        ) matched ON true"""


def _snippet_columns(p: Params, lexical_matched: str, vector_heading: str) -> str:
    options = p.add(_HEADLINE_OPTIONS)
    return f"""
           CASE WHEN {lexical_matched} THEN coalesce(matched.heading_path, '{{}}') ELSE {vector_heading} END
               AS heading_path,
           CASE WHEN {lexical_matched}
                THEN ts_headline(secondbrain_ts_config(), coalesce(matched.text, left(f.body, {SOURCE_CHARS})), q.tsq,
                                 {options})
           END AS headline,
           CASE WHEN {lexical_matched} THEN coalesce(matched.text, left(f.body, {SOURCE_CHARS})) END AS source"""


def _with_section_dates(p: Params, filters: Filters, hits: str) -> str:
    """The rows of the statement `hits` (with the note's id as `file_id`), each with the days its section is from
    (`section_start`, `section_end`, `section_source`): those of the note's first chunk under the hit's heading path
    that the date range lets through, so a January search's hit is dated in January even when the note is not."""
    return f"""
    SELECT hits.*, section.date_start AS section_start, section.date_end AS section_end,
           section.date_source AS section_source
    FROM ({hits}) hits
    LEFT JOIN LATERAL (
        SELECT c.date_start, c.date_end, c.date_source
        FROM vault_chunks c
        WHERE c.file_id = hits.file_id AND c.heading_path = hits.heading_path AND {_in_range(p, filters)}
        ORDER BY c.chunk_index
        LIMIT 1
    ) section ON true
    ORDER BY hits.position"""


def lexical_notes_statement(text: str, filters: Filters, limit: int) -> Statement:
    """The lexical search statement."""
    p = Params()
    ctes = _lexical_ctes(p, text, filters, limit)
    snippets = _snippet_columns(p, "true", "'{}'::text[]")
    hits = f"""
    SELECT f.id AS file_id, l.rank AS position, f.path, f.title, f.tags, f.date_start, f.date_end, f.date_source,
           l.score::float8 AS score, NULL::text AS chunk, true AS contains, {snippets}
    FROM lexical_ranked l JOIN vault_files f ON f.id = l.id CROSS JOIN query q {_matched_chunk(_in_range(p, filters))}
    """
    return p.statement(f"""
    WITH {ctes}
    {_with_section_dates(p, filters, hits)}""")


def vector_notes_statement(vector: np.ndarray, filters: Filters, limit: int) -> Statement:
    """The vector search statement; run it with `vector_scan` (the HNSW settings)."""
    p = Params()
    ctes = _vector_ctes(p, vector, filters, limit)
    hits = """
    SELECT f.id AS file_id, v.rank AS position, f.path, f.title, f.tags, f.date_start, f.date_end, f.date_source,
           (1 - v.distance)::float8 AS score, false AS contains,
           v.heading_path, v.content AS chunk, NULL::text AS headline, NULL::text AS source
    FROM vector_ranked v JOIN vault_files f ON f.id = v.id
    """
    return p.statement(f"""
    WITH {ctes}
    {_with_section_dates(p, filters, hits)}""")


def hybrid_notes_statement(text: str, vector: np.ndarray, filters: Filters, limit: int) -> Statement:
    """Both arms and their reciprocal rank fusion in one statement; run it with `vector_scan` (the HNSW settings).

    The snippet prefers the lexical arm's highlighted excerpt (it shows why the note matched the typed words), and
    the heading path is the section it is from; for a note only the vector arm found, both are its best chunk's.
    """
    depth = max(2 * limit, MIN_FUSION_DEPTH)
    p = Params()
    lexical = _lexical_ctes(p, text, filters, depth)
    vector_ctes = _vector_ctes(p, vector, filters, depth)
    limit_p = p.add(limit)
    floor_p = p.add(VECTOR_ONLY_FLOOR)
    snippets = _snippet_columns(p, "h.lexical_matched", "coalesce(h.heading_path, '{}')")
    hits = f"""
    SELECT f.id AS file_id, row_number() OVER (ORDER BY h.score DESC, f.path) AS position,
           f.path, f.title, f.tags, f.date_start, f.date_end, f.date_source,
           h.score::float8 AS score, h.content AS chunk, h.lexical_matched AS contains,
           {snippets}
    FROM top h JOIN vault_files f ON f.id = h.id CROSS JOIN query q {_matched_chunk(_in_range(p, filters))}
    """
    return p.statement(f"""
    WITH {lexical},
    {vector_ctes},
    fused AS (
        SELECT coalesce(l.id, v.id) AS id,
               {rrf_sql("l.rank", "v.rank")} AS score,
               l.id IS NOT NULL AS lexical_matched,
               v.heading_path, v.content
        FROM lexical_ranked l FULL JOIN vector_ranked v ON v.id = l.id
        WHERE l.id IS NOT NULL OR 1 - v.distance >= {floor_p}
    ),
    top AS (
        SELECT fused.*, f.path
        FROM fused JOIN vault_files f ON f.id = fused.id
        ORDER BY fused.score DESC, f.path
        LIMIT {limit_p}
    )
    {_with_section_dates(p, filters, hits)}""")


async def fetch_notes(
    pool: asyncpg.Pool, statement: Statement, *, vector_scan: bool, timeout_seconds: float
) -> list[asyncpg.Record]:
    """The rows of one note search statement, connection and all within `timeout_seconds`; Unavailable when it does
    not finish in time (it is cancelled on the server, not left running)."""
    deadline = time.monotonic() + timeout_seconds
    try:
        async with pool.acquire(timeout=seconds_left(deadline)) as connection:
            return await fetch(connection, statement, vector_scan=vector_scan, deadline=deadline)
    except (TimeoutError, asyncpg.QueryCanceledError) as error:
        raise Unavailable(
            f"the search did not finish within {timeout_seconds:g} s; try fewer words or a narrower filter"
        ) from error
