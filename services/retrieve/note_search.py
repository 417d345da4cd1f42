"""Note-level search (the search box, the Search RPC): the query checked, the statement of its mode run, and each
note found shaped into a hit with a readable snippet. The statements, and how each mode ranks, are in
`secondbrain.retrieve.store.notes`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import asyncpg
import numpy as np

from secondbrain.date_sources import span_text
from secondbrain.errors import InvalidInput
from secondbrain.retrieve import snippets, store
from secondbrain.retrieve.chunk_text import without_prefix
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.modes import mode_named

MAX_QUERY_CHARS = 1_000
MAX_LIMIT = 100
# pgvector's largest vector dimension.
MAX_DIMENSION = 16_000
DEFAULT_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class NoteHit:
    path: str
    title: str
    # Only the order is meaningful; see `secondbrain.retrieve.store.notes` for each mode's formula.
    score: float
    # The block of the note around the best match (a paragraph, a list item, a table row with its header), as
    # markdown that reads as the note does (see `secondbrain.retrieve.snippets`); for a hit of the vector arm alone,
    # the first block of the best chunk.
    snippet: str
    tags: list[str]
    # The best-matching chunk's heading path; [] when the note was found by the lexical arm alone.
    heading_path: list[str]
    # Whether the note holds the query's words (the lexical arm found it); False: listed for its meaning alone.
    contains: bool = True
    # Where the matched words are in `snippet`: [start, end) in code points. Offsets, not markers in the text: a
    # marker such as `**` is also the note's own bold (found by a user: the note's bold "Worktop" was highlighted).
    highlights: list[tuple[int, int]] = field(default_factory=list)
    # The days the note is from ("2026-01-20", "2026-01-19..2026-01-25") and where that was read; "" not dated yet.
    date: str = ""
    date_source: str = ""
    # The days the hit's section (its heading and snippet) is from, within the date range asked, and where that was
    # read: a log's dated heading's, else the note's.
    section_date: str = ""
    section_date_source: str = ""


@dataclass(frozen=True)
class NoteSearchResult:
    hits: list[NoteHit]
    vector_arm_ran: bool
    vector_arm_skipped_reason: str
    # (stage, milliseconds). Hybrid runs both arms and the fusion in one statement, so it reports one "fuse" stage.
    # The stages of one arm keep the Search RPC's words for it ("keyword", "semantic"): clients see them.
    timings: list[tuple[str, float]]


async def search_notes(
    pool: asyncpg.Pool,
    query: str,
    mode: str,
    filters: Filters,
    limit: int,
    query_vector: np.ndarray | None,
    vector_skipped_reason: str = "",
    *,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
) -> NoteSearchResult:
    """Search whole notes in `mode` (lexical, vector or hybrid: see `secondbrain.retrieve.modes`); `query_vector`
    is the embedded query, or None when embeddings are unavailable (then the vector arm does not run and
    `vector_skipped_reason` is reported as why).

    Raises InvalidInput for an empty or over-long query, a limit outside 1..100 or an unknown mode, and Unavailable
    when the statement does not finish within `timeout_seconds` (it is cancelled on the server, not left running).
    """
    text = validate(query, mode, limit)
    arm = mode_named(mode)
    vector = None if arm == "lexical" or query_vector is None else _validate_vector(query_vector)
    # Lexical mode never wants the vector arm, so it has no reason to report for not running it.
    skipped = arm != "lexical" and vector is None
    reason = (vector_skipped_reason or "no query embedding was available") if skipped else ""

    if arm == "vector" and vector is None:
        return NoteSearchResult([], False, reason, [])
    if arm == "lexical" or vector is None:
        stage, statement = "keyword", store.lexical_notes_statement(text, filters, limit)
    elif arm == "vector":
        stage, statement = "semantic", store.vector_notes_statement(vector, filters, limit)
    else:
        stage, statement = "fuse", store.hybrid_notes_statement(text, vector, filters, limit)

    started = time.perf_counter()
    rows = await store.fetch_notes(pool, statement, vector_scan=vector is not None, timeout_seconds=timeout_seconds)
    elapsed_ms = (time.perf_counter() - started) * 1000
    hits = [_hit(row, text) for row in rows]
    return NoteSearchResult(hits, vector is not None, reason, [(stage, elapsed_ms)])


def validate(query: str, mode: str, limit: int) -> str:
    mode_named(mode)
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


# --- Hits -------------------------------------------------------------------------------------------------------


def _hit(row: asyncpg.Record, text: str) -> NoteHit:
    if row["source"] is not None:
        source = row["source"]
        needle = text if text.casefold() in source.casefold() else None
        snippet, highlights = snippets.build(source, row["headline"], needle)
    else:
        snippet, highlights = snippets.build(
            without_prefix(row["chunk"] or "", row["title"], row["heading_path"]), None, None
        )
    return NoteHit(
        path=row["path"],
        title=row["title"],
        score=float(row["score"]),
        snippet=snippet,
        highlights=highlights,
        tags=list(row["tags"]),
        heading_path=list(row["heading_path"]),
        contains=bool(row["contains"]),
        date=span_text(row["date_start"], row["date_end"]),
        date_source=row["date_source"] or "",
        section_date=span_text(row["section_start"], row["section_end"]),
        section_date_source=row["section_source"] or "",
    )
