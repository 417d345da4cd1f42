"""The retrieve service's chunk-level SQL: hybrid retrieval in one statement, neighbours, and linked notes.

Hybrid retrieval is one statement per query: the top k chunks by BM25 (postings read through their primary key, one
range per query lexeme), ordered by their BM25 plus a share of their heading section's, and the top k by cosine
distance (the partial HNSW index of the model's dimension), fused by reciprocal rank fusion with k = 60. Filters and
quoted phrases/exclusions apply inside both arms. The vector arm's settings (`hnsw.ef_search`,
`hnsw.iterative_scan`) are set for the statement's own transaction only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg
import numpy as np

from secondbrain.retrieve.filters import Filters

RRF_K = 60
BM25_K1 = 1.2
BM25_B = 0.75
# A lexical candidate's score is its chunk's BM25 plus this times its section's: the chunks under the same heading
# path, as one text. A section split into several chunks by the size budget is one passage to its author, and a chunk
# whose section matches the query throughout is the better hit. Chosen on SciFact's train split (whose abstracts have
# no headings, so a section is the whole abstract): lexical nDCG@10 0.685 at 0, 0.691 at 0.5, 0.690 at 1 and 2; it
# also helps the Obsidian Help questions (docs/benchmarks.md, retrieval tuning log).
SECTION_WEIGHT = 0.5
HNSW_EF_SEARCH = 100
# Postings read per query lexeme, best first. Only lexemes in more chunks than this are cut, and their IDF is low.
MAX_POSTINGS_PER_LEXEME = 2000
# Dimensions with a partial HNSW index (migration 0001); any other is searched exactly, which is fine at vault scale.
INDEXED_DIMENSIONS = frozenset({384, 768, 1024, 1536})

_PHRASE = re.compile(r'(-?)"([^"]+)"')
_EXCLUSION = re.compile(r"(?:^|\s)-(\w[\w'-]*)", re.UNICODE)


@dataclass(frozen=True)
class LexicalQuery:
    """A question split the way a search box reads it: words to score, plus "phrases" and -exclusions to obey."""

    scored_text: str
    constraint_text: str

    @classmethod
    def parse(cls, query: str) -> LexicalQuery:
        phrases = [(sign, text.strip()) for sign, text in _PHRASE.findall(query) if text.strip()]
        rest = _PHRASE.sub(" ", query)
        words = [f"-{word}" for word in _EXCLUSION.findall(rest)]
        scored = [_EXCLUSION.sub(" ", rest).replace('"', " "), *(text for sign, text in phrases if not sign)]
        constraints = [f'{sign}"{text}"' for sign, text in phrases] + words
        return cls(" ".join(" ".join(scored).split()), " ".join(constraints))


@dataclass(frozen=True)
class Candidate:
    chunk_id: int
    file_id: int
    chunk_index: int
    lexical_rank: int | None
    vector_rank: int | None
    fused: float


def _bm25(idf: str, tf: str, length: str, average: str) -> str:
    """One lexeme's BM25 term for a text, from SQL expressions for its parts."""
    return f"{idf} * {tf} * {BM25_K1 + 1} / ({tf} + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * {length} / {average}))"


def _hybrid_sql(dimension: int | None, filters: Filters, constrained: bool) -> tuple[str, int]:
    """The statement, and the number of its first filter parameter. $1 scored text, $2 constraint text, $3 k,
    $4 the query vector (only with a vector arm)."""
    first_filter = 5 if dimension is not None else 4
    filter_sql, _ = filters.sql("f", first_filter)
    restrict = bool(filters) or constrained
    allowed = (
        f"""allowed AS MATERIALIZED (
            SELECT c.id FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id
            WHERE {filter_sql}
              AND ($2 = '' OR c.tsv @@ websearch_to_tsquery(secondbrain_ts_config(), $2))
        ),"""
        if restrict
        else ""
    )
    lexical_restrict = "AND chunk_id IN (SELECT id FROM allowed)" if restrict else ""
    # A section's length counts only the chunks whose postings were read, as its term frequencies do.
    section_restrict = "AND c.id IN (SELECT id FROM allowed)" if restrict else ""
    vector_cte = "vector_ranked AS (SELECT NULL::bigint AS chunk_id, NULL::bigint AS rank WHERE false)"
    if dimension is not None:
        vector = f"c.embedding::vector({dimension})"
        vector_restrict = "AND c.id IN (SELECT id FROM allowed)" if restrict else ""
        vector_cte = f"""vector_ranked AS (
            SELECT id AS chunk_id, row_number() OVER (ORDER BY distance, id) AS rank
            FROM (
                SELECT c.id, {vector} <=> $4::vector({dimension}) AS distance
                FROM vault_chunks c
                WHERE vector_dims(c.embedding) = {dimension} {vector_restrict}
                ORDER BY {vector} <=> $4::vector({dimension})
                LIMIT $3
            ) nearest
        )"""
    sql = f"""
        WITH {allowed}
        query_lexemes AS (
            -- ($2, the phrase/exclusion constraint, is typed here so it is valid when no filter uses it.)
            SELECT DISTINCT lexeme FROM unnest(to_tsvector(secondbrain_ts_config(), $1::text))
            WHERE $2::text IS NOT NULL
        ),
        corpus AS (
            SELECT greatest(chunks, 1)::float8 AS n, greatest(total_length, 1)::float8 / greatest(chunks, 1) AS avgdl,
                   greatest(total_length, 1)::float8 / greatest(sections, 1) AS avgsection
            FROM corpus_stats
        ),
        terms AS (
            SELECT s.lexeme, ln(1 + (corpus.n - s.df + 0.5) / (s.df + 0.5)) AS idf
            FROM query_lexemes q JOIN lexeme_stats s ON s.lexeme = q.lexeme CROSS JOIN corpus
        ),
        postings AS MATERIALIZED (
            SELECT t.lexeme, t.idf, p.chunk_id, p.tf, p.length
            FROM terms t
            CROSS JOIN LATERAL (
                SELECT chunk_id, tf, length FROM chunk_postings
                WHERE lexeme = t.lexeme {lexical_restrict}
                ORDER BY impact DESC
                LIMIT {MAX_POSTINGS_PER_LEXEME}
            ) p
        ),
        chunk_scores AS (
            SELECT p.chunk_id, sum({_bm25("p.idf", "p.tf", "p.length", "corpus.avgdl")}) AS score
            FROM postings p CROSS JOIN corpus
            GROUP BY p.chunk_id
            ORDER BY score DESC, p.chunk_id
            LIMIT $3
        ),
        -- The same k chunks, each scored again with its section's BM25 added: the section's chunks as one text, their
        -- term frequencies and lengths summed (from the postings already read, so a lexeme's cut tail counts nowhere).
        top_chunks AS (
            SELECT s.chunk_id, s.score, c.file_id, c.heading_path
            FROM chunk_scores s JOIN vault_chunks c ON c.id = s.chunk_id
        ),
        section_chunks AS (
            SELECT c.id, c.file_id, c.heading_path, c.lexeme_count FROM vault_chunks c
            WHERE (c.file_id, c.heading_path) IN (SELECT file_id, heading_path FROM top_chunks) {section_restrict}
        ),
        section_lengths AS (
            SELECT file_id, heading_path, sum(lexeme_count) AS length FROM section_chunks GROUP BY file_id, heading_path
        ),
        section_terms AS (
            SELECT s.file_id, s.heading_path, p.lexeme, max(p.idf) AS idf, sum(p.tf) AS tf
            FROM postings p JOIN section_chunks s ON s.id = p.chunk_id
            GROUP BY s.file_id, s.heading_path, p.lexeme
        ),
        section_scores AS (
            SELECT t.file_id, t.heading_path, sum({_bm25("t.idf", "t.tf", "l.length", "corpus.avgsection")}) AS score
            FROM section_terms t JOIN section_lengths l USING (file_id, heading_path) CROSS JOIN corpus
            GROUP BY t.file_id, t.heading_path
        ),
        lexical AS (
            SELECT c.chunk_id, c.score + {SECTION_WEIGHT} * coalesce(s.score, 0) AS score
            FROM top_chunks c LEFT JOIN section_scores s USING (file_id, heading_path)
        ),
        lexical_ranked AS (
            SELECT chunk_id, row_number() OVER (ORDER BY score DESC, chunk_id) AS rank FROM lexical
        ),
        {vector_cte},
        fused AS (
            SELECT coalesce(l.chunk_id, v.chunk_id) AS chunk_id, l.rank AS lexical_rank, v.rank AS vector_rank,
                   coalesce(1.0 / ({RRF_K} + l.rank), 0) + coalesce(1.0 / ({RRF_K} + v.rank), 0) AS fused
            FROM lexical_ranked l FULL JOIN vector_ranked v ON v.chunk_id = l.chunk_id
        )
        SELECT fused.chunk_id, c.file_id, c.chunk_index, fused.lexical_rank, fused.vector_rank, fused.fused
        FROM fused JOIN vault_chunks c ON c.id = fused.chunk_id
        ORDER BY fused.fused DESC, fused.chunk_id
        LIMIT $3
    """
    return sql, first_filter


async def hybrid_candidates(
    connection: asyncpg.Connection,
    query: str,
    k: int,
    filters: Filters,
    vector: np.ndarray | None,
    *,
    lexical: bool = True,
    statement_timeout: float | None = None,
) -> list[Candidate]:
    """The fused top `k` chunks for one query; `vector` None skips the vector arm, `lexical` False the BM25 arm."""
    parsed = LexicalQuery.parse(query)
    dimension = None if vector is None else int(vector.shape[0])
    sql, first_filter = _hybrid_sql(dimension, filters, bool(parsed.constraint_text))
    params: list[object] = [parsed.scored_text if lexical else "", parsed.constraint_text, k]
    if vector is not None:
        params.append(vector)
    params.extend(filters.sql("f", first_filter)[1])
    async with connection.transaction():
        if vector is not None:
            await connection.execute(
                f"SET LOCAL hnsw.ef_search = {HNSW_EF_SEARCH}; SET LOCAL hnsw.iterative_scan = relaxed_order"
            )
        rows = await connection.fetch(sql, *params, timeout=statement_timeout)
    return [
        Candidate(r["chunk_id"], r["file_id"], r["chunk_index"], r["lexical_rank"], r["vector_rank"], float(r["fused"]))
        for r in rows
    ]


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


async def chunks_around(
    connection: asyncpg.Connection,
    winners: Sequence[tuple[int, int]],
    radius: int,
    statement_timeout: float | None = None,
) -> list[ChunkRow]:
    """The chunks within `radius` of each (file_id, chunk_index) winner, the winners included, in one query."""
    if not winners:
        return []
    rows = await connection.fetch(
        """
        SELECT c.id, c.file_id, c.chunk_index, c.heading_path, c.start_line, c.end_line, c.content, c.token_count,
               f.path, f.title
        FROM unnest($1::bigint[], $2::int[]) AS w(file_id, chunk_index)
        JOIN vault_chunks c ON c.file_id = w.file_id AND c.chunk_index BETWEEN w.chunk_index - $3 AND w.chunk_index + $3
        JOIN vault_files f ON f.id = c.file_id
        """,
        [file_id for file_id, _ in winners],
        [index for _, index in winners],
        radius,
        timeout=statement_timeout,
    )
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
    filter_sql, filter_params = filters.sql("f", 4)
    rows = await connection.fetch(
        f"""
        WITH targets AS (
            -- The winners' order first, then each winner's link order.
            SELECT f.id, min(array_position($1::bigint[], l.file_id) * 100000 + l.ordinal) AS position
            FROM vault_links l
            JOIN vault_files f
              ON lower(f.path) = lower(l.target) OR lower(f.path) = lower(l.target) || '.md'
              OR lower(regexp_replace(f.path, '^.*/', '')) = lower(l.target) || '.md'
              OR lower(f.title) = lower(l.target)
              OR lower(l.target) = ANY(SELECT lower(a) FROM unnest(f.aliases) a)
            WHERE l.file_id = ANY($1::bigint[]) AND NOT (f.id = ANY($1::bigint[])) AND {filter_sql}
            GROUP BY f.id
        )
        SELECT best.id, best.file_id, best.chunk_index
        FROM targets t
        CROSS JOIN LATERAL (
            SELECT c.id, c.file_id, c.chunk_index FROM vault_chunks c
            WHERE c.file_id = t.id
            ORDER BY ts_rank(c.tsv, plainto_tsquery(secondbrain_ts_config(), $2)) DESC, c.chunk_index
            LIMIT 1
        ) best
        ORDER BY t.position
        LIMIT $3
        """,
        list(file_ids),
        query,
        len(file_ids) * 3,
        *filter_params,
        timeout=statement_timeout,
    )
    return [(r["id"], r["file_id"], r["chunk_index"]) for r in rows]
