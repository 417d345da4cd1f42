"""Note-level search (the first version's search box): keyword, semantic and hybrid, each one SQL statement.

Units are whole notes. Keyword search matches the note's weighted tsvector (`vault_files.tsv`: title A, aliases
and tags B, body D) with `websearch_to_tsquery`, so every typed word must match, quoted phrases and `-exclusions`
work and `or` alternates, and it also matches the query as a case-insensitive substring of the title, path or body
(part of a word, a path fragment, an identifier the stemmer mangles). Semantic search ranks chunks by cosine
distance and keeps each note's best chunk. Hybrid fuses the two rankings by reciprocal rank fusion in the same
statement (no Python fusion, one round trip).

Ranking (only the order is meaningful; scores of different modes are not comparable):

- keyword: ``tier + r / (r + 1)`` where ``r = ts_rank_cd(tsv, query) / (1 + ln(note length))`` with the default
  weights (A 1.0, B 0.4, C 0.2, D 0.1), and ``tier`` is 2 when the title carries the query (it contains the typed
  text, or every query term is in the title), 1 when the path contains the typed text or the aliases and tags
  carry every term, else 0. ``r / (r + 1)`` is below 1, so a title match always ranks above a path, alias or tag
  match, which ranks above a body-only match; within a tier the cover-density rank decides, and a substring-only
  match (part of a word) ranks below whole-word matches of the same tier. Ties go to the path, alphabetically.
- semantic: the cosine similarity of the note's best chunk, ``1 - (embedding <=> query_vector)``.
- hybrid: ``sum over the arms of 1 / (60 + rank in that arm)``, each arm ranked to ``max(2 * limit, 50)`` notes.

Every value the user typed is a bind parameter; the only things formatted into SQL are the filter clauses (built by
`Filters.sql`, whose values are parameters too) and the vector dimension, an integer taken from the array's shape,
which the HNSW partial indexes need as a literal cast (`embedding::vector(384)`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Literal, get_args

import asyncpg
import numpy as np

from secondbrain.errors import InvalidInput, Unavailable
from secondbrain.retrieve.filters import Filters

SearchMode = Literal["keyword", "semantic", "hybrid"]

MAX_QUERY_CHARS = 1_000
MAX_LIMIT = 100
# Reciprocal rank fusion constant, as in the design record (and Cormack et al.): damps the head of each ranking.
RRF_K = 60
# How deep each arm ranks before fusion: a note ranked 40th by both arms should still be able to reach the top.
MIN_FUSION_DEPTH = 50
# Chunks fetched for every note returned by the semantic arm. Several of a note's chunks are often among the nearest
# (they share its heading prefix and subject), and collapsing happens after the index scan's LIMIT.
CHUNKS_PER_NOTE = 4
MAX_CHUNK_CANDIDATES = 1_000
# hnsw.ef_search 100 is the design record's recall setting; relaxed_order lets the scan go on past ef_search when the
# filter rejects rows, so a narrow folder or tag filter still fills the LIMIT (pgvector 0.8's iterative scan).
HNSW_EF_SEARCH = 100
# pg_trgm takes trigrams from runs of letters and digits only. A query without three in a row ("ab", "C#", "%_%",
# "!!!") gives the trigram indexes nothing to look up, so its substring match would read every note: it is skipped.
_TRIGRAM_RUN = re.compile(r"[^\W_]{3}")
# pgvector's largest vector dimension.
MAX_DIMENSION = 16_000
DEFAULT_TIMEOUT_SECONDS = 10.0
SNIPPET_CHARS = 300

# ts_headline marks matches with characters that do not occur in notes (Unicode private use), so that a note's own
# `**bold**` is never mistaken for a match; they become `**` once the snippet is plain text.
_START, _STOP = "\ue000", "\ue001"
_HEADLINE_OPTIONS = (
    f'StartSel={_START}, StopSel={_STOP}, MaxWords=20, MinWords=8, MaxFragments=2, FragmentDelimiter=" … "'
)
# A `"phrase"` or a `-word` means the user is writing search syntax, not text to find verbatim.
_SEARCH_SYNTAX = re.compile(r'"|(?:^|\s)-\w')
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class NoteHit:
    path: str
    title: str
    # Only the order is meaningful; see the module docstring for each mode's formula.
    score: float
    # Plain text around the best match, matched words marked **like this**; for a semantic-only hit, the start of
    # the best chunk.
    snippet: str
    tags: list[str]
    # The best-matching chunk's heading path; [] when the note was found by the keyword arm alone.
    heading_path: list[str]


@dataclass(frozen=True)
class NoteSearchResult:
    hits: list[NoteHit]
    vector_arm_ran: bool
    vector_arm_skipped_reason: str
    # (stage, milliseconds). Hybrid runs both arms and the fusion in one statement, so it reports one "fuse" stage.
    timings: list[tuple[str, float]]


async def search_notes(
    pool: asyncpg.Pool,
    query: str,
    mode: SearchMode,
    filters: Filters,
    limit: int,
    query_vector: np.ndarray | None,
    vector_skipped_reason: str = "",
    *,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
) -> NoteSearchResult:
    """Search whole notes; `query_vector` is the embedded query, or None when embeddings are unavailable (then the
    semantic arm does not run and `vector_skipped_reason` is reported as why).

    Raises InvalidInput for an empty or over-long query, a limit outside 1..100 or an unknown mode, and Unavailable
    when the statement does not finish within `timeout_seconds` (it is cancelled on the server, not left running).
    """
    text = validate(query, mode, limit)
    vector = None if mode == "keyword" or query_vector is None else _validate_vector(query_vector)
    # Keyword mode never wants the vector arm, so it has no reason to report for not running it.
    skipped = mode != "keyword" and vector is None
    reason = (vector_skipped_reason or "no query embedding was available") if skipped else ""

    if mode == "semantic" and vector is None:
        return NoteSearchResult([], False, reason, [])
    if mode == "keyword" or vector is None:
        stage, (sql, params) = "keyword", keyword_statement(text, filters, limit)
    elif mode == "semantic":
        stage, (sql, params) = "semantic", semantic_statement(vector, filters, limit)
    else:
        stage, (sql, params) = "fuse", hybrid_statement(text, vector, filters, limit)

    started = time.perf_counter()
    rows = await _run(pool, sql, params, with_vector=vector is not None, timeout_seconds=timeout_seconds)
    elapsed_ms = (time.perf_counter() - started) * 1000
    hits = [_hit(row, text) for row in rows]
    return NoteSearchResult(hits, vector is not None, reason, [(stage, elapsed_ms)])


def validate(query: str, mode: str, limit: int) -> str:
    if mode not in get_args(SearchMode):
        raise InvalidInput(f"unknown search mode {mode!r}: use keyword, semantic or hybrid")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, not {limit!r}")
    text = query.strip()
    if not text:
        raise InvalidInput("type something to search for")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInput(
            f"the search query is {len(text):,} characters long; shorten it to at most {MAX_QUERY_CHARS:,}"
        )
    # PostgreSQL text cannot hold NUL, and lone surrogates are not UTF-8: say so instead of failing in the driver.
    if "\x00" in text:
        raise InvalidInput("the search query contains a NUL character; remove it")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidInput("the search query is not valid Unicode text") from error
    return text


def _validate_vector(query_vector: np.ndarray) -> np.ndarray:
    """A programming error, not user input, if this fails: the embedder returned something that is not a vector."""
    vector = np.asarray(query_vector, dtype=np.float32)
    if vector.ndim != 1 or not 1 <= vector.size <= MAX_DIMENSION:
        raise ValueError(f"query vector must be one-dimensional with 1..{MAX_DIMENSION} values, not {vector.shape}")
    if not np.all(np.isfinite(vector)) or not np.any(vector):
        raise ValueError("query vector must be finite and non-zero (cosine distance is undefined otherwise)")
    return vector


# --- SQL --------------------------------------------------------------------------------------------------------


class _Params:
    """Bind parameters in order; `add` returns the placeholder to write into the SQL."""

    def __init__(self) -> None:
        self.values: list[object] = []

    def add(self, value: object) -> str:
        self.values.append(value)
        return f"${len(self.values)}"

    def filters(self, filters: Filters, alias: str) -> str:
        sql, values = filters.sql(alias, len(self.values) + 1)
        self.values.extend(values)
        return sql


def _like_contains(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _substring_pattern(text: str) -> str | None:
    """The ILIKE pattern of the substring match, or None (no substring match) for a query the trigram indexes cannot
    look up, or one written in search syntax, whose literal text is not what the user is looking for."""
    if not _TRIGRAM_RUN.search(text) or _SEARCH_SYNTAX.search(text):
        return None
    return _like_contains(text)


def _keyword_ctes(p: _Params, text: str, filters: Filters, depth: int) -> str:
    """CTEs `query` (the tsquery and the substring pattern) and `keyword` (id, score, rank), best `depth` notes.

    `query` is NOT MATERIALIZED so the planner substitutes its expressions: `f.tsv @@ <tsquery>` and
    `f.title ILIKE <pattern>` then compare an indexed column with a constant, and the four OR'ed conditions become a
    BitmapOr of the tsv GIN index and the three trigram GIN indexes. A NULL pattern (no substring match) folds away.
    """
    where = p.filters(filters, "f")
    query, pattern, depth_p = p.add(text), p.add(_substring_pattern(text)), p.add(depth)
    return f"""
    query AS NOT MATERIALIZED (
        SELECT websearch_to_tsquery(secondbrain_ts_config(), {query}) AS tsq,
               {query}::text AS needle,
               {pattern}::text AS pattern
    ),
    keyword_scored AS (
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
          AND {where}
    ),
    keyword AS (
        SELECT id, score, row_number() OVER (ORDER BY score DESC, path) AS rank
        FROM keyword_scored
        ORDER BY rank
        LIMIT {depth_p}
    )"""


def _semantic_ctes(p: _Params, vector: np.ndarray, filters: Filters, depth: int) -> str:
    """CTE `semantic` (id, distance, rank, heading_path, content): the `depth` notes nearest the query vector, each
    by its best chunk.

    The ORDER BY repeats the partial index's expression and the WHERE its predicate, so the planner can use
    `vault_chunks_embedding_<dim>_idx`; the filter joins vault_files inside the scan, and the iterative scan (set by
    the caller for its transaction) keeps reading the graph until enough chunks pass it. `nearest` is MATERIALIZED
    so the index scan's LIMIT is applied before collapsing to notes (pgvector's recommended shape for
    relaxed_order, which may return rows slightly out of order: they are re-sorted here).
    """
    dim = int(vector.shape[0])
    where = p.filters(filters, "f")
    vector_p = p.add(vector)
    candidates = p.add(min(max(depth * CHUNKS_PER_NOTE, HNSW_EF_SEARCH), MAX_CHUNK_CANDIDATES))
    depth_p = p.add(depth)
    return f"""
    nearest AS MATERIALIZED (
        SELECT c.file_id, c.heading_path, c.content, c.embedding::vector({dim}) <=> {vector_p} AS distance
        FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id
        WHERE vector_dims(c.embedding) = {dim}
          AND {where}
        ORDER BY c.embedding::vector({dim}) <=> {vector_p}
        LIMIT {candidates}
    ),
    best_chunk AS (
        SELECT DISTINCT ON (file_id) file_id AS id, heading_path, content, distance
        FROM nearest
        ORDER BY file_id, distance
    ),
    semantic AS (
        SELECT b.id, b.distance, b.heading_path, b.content,
               row_number() OVER (ORDER BY b.distance, f.path) AS rank
        FROM best_chunk b JOIN vault_files f ON f.id = b.id
        ORDER BY rank
        LIMIT {depth_p}
    )"""


# Every statement returns the same columns, which `_hit` turns into a NoteHit: headline (ts_headline of the body) and
# around (a window of the body around the first occurrence of the typed text) are NULL where the keyword arm did not
# match; chunk (the best chunk's text) is NULL where the semantic arm did not.
def _snippet_columns(p: _Params, keyword_matched: str) -> str:
    options = p.add(_HEADLINE_OPTIONS)
    return f"""
           CASE WHEN {keyword_matched}
                THEN ts_headline(secondbrain_ts_config(), f.body, q.tsq, {options}) END AS headline,
           CASE WHEN {keyword_matched} AND q.pattern IS NOT NULL
                THEN substr(f.body, greatest(strpos(lower(f.body), lower(q.needle)) - 200, 1),
                            400 + length(q.needle)) END AS around"""


def keyword_statement(text: str, filters: Filters, limit: int) -> tuple[str, list[object]]:
    """The keyword search statement and its parameters (public so tests and benchmarks can EXPLAIN it)."""
    p = _Params()
    ctes = _keyword_ctes(p, text, filters, limit)
    snippets = _snippet_columns(p, "true")
    sql = f"""
    WITH {ctes}
    SELECT f.path, f.title, f.tags, k.score::float8 AS score,
           '{{}}'::text[] AS heading_path, NULL::text AS chunk, {snippets}
    FROM keyword k JOIN vault_files f ON f.id = k.id CROSS JOIN query q
    ORDER BY k.rank"""
    return sql, p.values


def semantic_statement(vector: np.ndarray, filters: Filters, limit: int) -> tuple[str, list[object]]:
    """The semantic search statement and its parameters; run it after `SET LOCAL` of the HNSW settings."""
    p = _Params()
    ctes = _semantic_ctes(p, vector, filters, limit)
    sql = f"""
    WITH {ctes}
    SELECT f.path, f.title, f.tags, (1 - s.distance)::float8 AS score,
           s.heading_path, s.content AS chunk, NULL::text AS headline, NULL::text AS around
    FROM semantic s JOIN vault_files f ON f.id = s.id
    ORDER BY s.rank"""
    return sql, p.values


def hybrid_statement(text: str, vector: np.ndarray, filters: Filters, limit: int) -> tuple[str, list[object]]:
    """Both arms and their reciprocal rank fusion in one statement; run it after `SET LOCAL` of the HNSW settings.

    The snippet prefers the keyword arm's highlighted excerpt (it shows why the note matched the typed words); the
    heading path is the semantic arm's best chunk, when that arm found the note.
    """
    depth = max(2 * limit, MIN_FUSION_DEPTH)
    p = _Params()
    keyword = _keyword_ctes(p, text, filters, depth)
    semantic = _semantic_ctes(p, vector, filters, depth)
    limit_p = p.add(limit)
    snippets = _snippet_columns(p, "h.keyword_matched")
    sql = f"""
    WITH {keyword},
    {semantic},
    fused AS (
        SELECT coalesce(k.id, s.id) AS id,
               coalesce(1.0 / ({RRF_K} + k.rank), 0) + coalesce(1.0 / ({RRF_K} + s.rank), 0) AS score,
               k.id IS NOT NULL AS keyword_matched,
               s.heading_path, s.content
        FROM keyword k FULL JOIN semantic s ON s.id = k.id
    ),
    top AS (
        SELECT fused.*, f.path
        FROM fused JOIN vault_files f ON f.id = fused.id
        ORDER BY fused.score DESC, f.path
        LIMIT {limit_p}
    )
    SELECT f.path, f.title, f.tags, h.score::float8 AS score,
           coalesce(h.heading_path, '{{}}') AS heading_path, h.content AS chunk, {snippets}
    FROM top h JOIN vault_files f ON f.id = h.id CROSS JOIN query q
    ORDER BY h.score DESC, f.path"""
    return sql, p.values


async def _run(
    pool: asyncpg.Pool, sql: str, params: list[object], *, with_vector: bool, timeout_seconds: float
) -> list[asyncpg.Record]:
    """Run one statement with a deadline. asyncpg's `timeout=` cancels the statement on the server when it fires, and
    so does cancelling the calling task (a client cancel or deadline). The vector statements run in a transaction
    anyway (for SET LOCAL), so they also get a `statement_timeout`: the server stops them even if a cancel request
    is lost."""
    deadline = time.monotonic() + timeout_seconds

    def remaining() -> float:
        return max(deadline - time.monotonic(), 0.001)

    try:
        async with pool.acquire(timeout=remaining()) as connection:
            if not with_vector:
                return await connection.fetch(sql, *params, timeout=remaining())
            # SET LOCAL scopes the HNSW settings to this transaction: other users of the pooled connection keep
            # the defaults.
            async with connection.transaction(readonly=True):
                await connection.execute(
                    f"SET LOCAL hnsw.ef_search = {HNSW_EF_SEARCH};"
                    " SET LOCAL hnsw.iterative_scan = relaxed_order;"
                    f" SET LOCAL statement_timeout = {int(remaining() * 1000) + 1}",
                    timeout=remaining(),
                )
                return await connection.fetch(sql, *params, timeout=remaining())
    except (TimeoutError, asyncpg.QueryCanceledError) as error:
        raise Unavailable(
            f"the search did not finish within {timeout_seconds:g} s; try fewer words or a narrower filter"
        ) from error


# --- Snippets ---------------------------------------------------------------------------------------------------


def _hit(row: asyncpg.Record, text: str) -> NoteHit:
    return NoteHit(
        path=row["path"],
        title=row["title"],
        score=float(row["score"]),
        snippet=_snippet(row, text),
        tags=list(row["tags"]),
        heading_path=list(row["heading_path"]),
    )


def _snippet(row: asyncpg.Record, text: str) -> str:
    """The highlighted words if ts_headline found any, else the line holding the typed text, else the best chunk,
    else the start of the note."""
    headline: str | None = row["headline"]
    if headline and _START in headline:
        return _shorten(_flatten(headline)).replace(_START, "**").replace(_STOP, "**")
    if row["around"]:
        line = _line_with(row["around"], text)
        if line is not None:
            return line
    if row["chunk"]:
        return _shorten(_flatten(_without_prefix(row["chunk"], row["title"], row["heading_path"])))
    return _shorten(_flatten(headline or ""))


def _line_with(window: str, text: str) -> str | None:
    """The line of `window` holding `text` (case-insensitively), at most about SNIPPET_CHARS long, `text` marked."""
    at = window.lower().find(text.lower())
    if at < 0:
        return None
    line_start = window.rfind("\n", 0, at) + 1
    line_end = window.find("\n", at + len(text))
    line_end = len(window) if line_end < 0 else line_end
    # Keep the match in view on a long line: up to a third of the room before it, the rest after.
    start = max(line_start, at - SNIPPET_CHARS // 3)
    end = min(line_end, max(at + len(text), start + SNIPPET_CHARS))
    before, match, after = window[start:at], window[at : at + len(text)], window[at + len(text) : end]
    lead = "… " if start > line_start else ""
    tail = " …" if end < line_end else ""
    return lead + _flatten(f"{before}**{match}**{after}") + tail


def _without_prefix(chunk: str, title: str, heading_path: list[str]) -> str:
    """A chunk's text without the `Title > Heading` line ingest puts first (it is embedded, not worth showing; the
    hit carries the title and heading path already). Ingest may shorten a very long title, hence the loose test."""
    first, separator, rest = chunk.partition("\n\n")
    if not separator or "\n" in first:
        return chunk
    if first == " > ".join((title, *heading_path)) or (title and first.startswith(title[:20])):
        return rest
    if heading_path and first.endswith(" > ".join(heading_path)):
        return rest
    return chunk


def _flatten(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _shorten(text: str) -> str:
    """At most about SNIPPET_CHARS, cut at a word, never leaving a match mark open."""
    if len(text) <= SNIPPET_CHARS:
        return text
    cut = text.rfind(" ", 0, SNIPPET_CHARS)
    short = text[: cut if cut > SNIPPET_CHARS // 2 else SNIPPET_CHARS].rstrip()
    if short.count(_START) > short.count(_STOP):
        short += _STOP
    return short + " …"
