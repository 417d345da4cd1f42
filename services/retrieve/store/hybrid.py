"""Hybrid chunk retrieval in one statement per query (what a chat turn reads).

The top k chunks by BM25 (postings read through their primary key, one range per query lexeme; a query word no chunk
has stands for the indexed word it differs from by a short ending), ordered by their BM25 plus a share of their
heading section's, and the top k by cosine distance (the partial HNSW index of the
model's dimension). Every candidate either arm found is then scored by both: its BM25 from the postings already read
(0 when it has none of the query's words) and its cosine similarity, computed for the lexical arm's candidates the
vector arm did not reach. The two are fused (`secondbrain.retrieve.fusion`); with both arms, each candidate also
gets its note's best evidence of each arm (a window over the candidates) and the share of the question's code it
contains as written (`secondbrain.retrieve.verbatim`, a regular expression on the candidates only). Filters and quoted
phrases/exclusions apply inside both arms (a phrase with no indexed word constrains nothing). The vector arm's
settings (`hnsw.ef_search`, `hnsw.iterative_scan`) are set for the statement's own transaction only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import asyncpg
import numpy as np

from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.fusion import DEFAULT_FUSION, Candidate, Fusion
from secondbrain.retrieve.store.statement import Params, Statement, deadline_after, exact_order, fetch
from secondbrain.retrieve.verbatim import code_tokens, pattern

BM25_K1 = 1.2
BM25_B = 0.75
# A lexical candidate's score is its chunk's BM25 plus this times its section's: the chunks under the same heading
# path, as one text. A section split into several chunks by the size budget is one passage to its author, and a chunk
# whose section matches the query throughout is the better hit. Chosen on SciFact's train split (whose abstracts have
# no headings, so a section is the whole abstract): lexical nDCG@10 0.685 at 0, 0.691 at 0.5, 0.690 at 1 and 2; it
# also helps the Obsidian Help questions (docs/benchmarks.md, retrieval tuning log).
SECTION_WEIGHT = 0.5
# A query word that no chunk has stands for an indexed word it differs from by an ending of at most this many letters
# (the stemmer leaves "joiner" and "joinery", "kilometres" and "kilometers" apart), both at least this long. Shorter
# words and longer endings found other words: "cost" found "costa" (a name), "mess" "messag", "folder" "fold",
# "straight" "straightforward" (docs/benchmarks.md, retrieval tuning log).
STAND_IN_MIN_LETTERS = 5
STAND_IN_ENDING_LETTERS = 2
# Postings read per query lexeme, best first. Only lexemes in more chunks than this are cut, and their IDF is low.
MAX_POSTINGS_PER_LEXEME = 2000

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


def _bm25(idf: str, tf: str, length: str, average: str) -> str:
    """One lexeme's BM25 term for a text, from SQL expressions for its parts."""
    return f"{idf} * {tf} * {BM25_K1 + 1} / ({tf} + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * {length} / {average}))"


# The statement, top to bottom. Its slots: the bind parameters ({scored}, {constraint}, {k}); the tuning constants and
# the BM25 and fused-score expressions; {allowed}, the CTE of the chunks the filters and the phrase/exclusion
# constraint let through (empty when nothing restricts), and the {*_allowed} conditions that keep each arm to it;
# {vector_top}, the vector arm, and {similarity}, every candidate's cosine similarity (or ones that find nothing).
_CANDIDATES = """
    WITH {allowed}
    query_lexemes AS (
        -- (The phrase/exclusion constraint is typed here so it is valid when no filter uses it.)
        SELECT DISTINCT lexeme FROM unnest(to_tsvector(secondbrain_ts_config(), secondbrain_parsable({scored}::text)))
        WHERE {constraint}::text IS NOT NULL
    ),
    corpus AS (
        SELECT greatest(chunks, 1)::float8 AS n, greatest(total_length, 1)::float8 / greatest(chunks, 1) AS avgdl,
               greatest(total_length, 1)::float8 / greatest(sections, 1) AS avgsection
        FROM corpus_stats
    ),
    known AS (
        SELECT s.lexeme, s.df FROM query_lexemes q JOIN lexeme_stats s ON s.lexeme = q.lexeme
    ),
    -- A query word no chunk has stands for the indexed word it differs from by an ending of at most
    -- {stand_in_letters} letters, the closer the better, then the commoner ("joiner" for "joinery", "kilometres" for
    -- "kilometers": the stemmer gives each a lexeme of its own). Both are words of at least {stand_in_min} letters:
    -- not numbers, versions or host names (an ID the notes lack is not another ID), nor a hyphenated compound, whose
    -- parts are searched already. The longer forms are a range of `lexeme_stats_prefix_idx` (byte order): from the
    -- word to the word with its last letter the next one up.
    unknown AS (
        SELECT lexeme FROM query_lexemes
        WHERE lexeme NOT IN (SELECT lexeme FROM known) AND lexeme ~ '^[[:alpha:]]+$'
          AND length(lexeme) >= {stand_in_min}
    ),
    stand_ins AS (
        SELECT DISTINCT ON (u.lexeme) f.lexeme, f.df
        FROM unknown u
        CROSS JOIN LATERAL (
            SELECT s.lexeme, s.df FROM lexeme_stats s
            WHERE s.lexeme = ANY (ARRAY(
                SELECT left(u.lexeme, n) FROM generate_series(
                    greatest({stand_in_min}, length(u.lexeme) - {stand_in_letters}), length(u.lexeme) - 1
                ) AS n
            ))
            UNION ALL
            SELECT s.lexeme, s.df FROM lexeme_stats s
            WHERE s.lexeme COLLATE "C" > u.lexeme COLLATE "C"
              AND s.lexeme COLLATE "C" < (
                  CASE WHEN getdatabaseencoding() = 'UTF8' OR octet_length(right(u.lexeme, 1)) = 1
                       THEN left(u.lexeme, -1) || chr(ascii(right(u.lexeme, 1)) + 1)
                       ELSE u.lexeme  -- no successor to name outside UTF-8: no longer forms
                  END
              ) COLLATE "C"
              AND length(s.lexeme) <= length(u.lexeme) + {stand_in_letters}
        ) f
        WHERE f.lexeme ~ '^[[:alpha:]]+$'
        ORDER BY u.lexeme, abs(length(f.lexeme) - length(u.lexeme)), f.df DESC, f.lexeme
    ),
    terms AS (
        SELECT t.lexeme, ln(1 + (corpus.n - t.df + 0.5) / (t.df + 0.5)) AS idf
        FROM (SELECT lexeme, df FROM known UNION SELECT lexeme, df FROM stand_ins) t CROSS JOIN corpus
    ),
    -- The most a chunk could score: every term at saturation, in the chunk and in its section. BM25 divided by it is
    -- a share in [0, 1] that says how much of the question a chunk matches, comparable with a cosine similarity.
    best_possible AS (
        SELECT greatest(coalesce(sum(idf), 0) * {saturated}, 1e-9) AS score FROM terms
    ),
    postings AS MATERIALIZED (
        SELECT t.lexeme, t.idf, p.chunk_id, p.tf, p.length
        FROM terms t
        CROSS JOIN LATERAL (
            SELECT chunk_id, tf, length FROM chunk_postings
            WHERE lexeme = t.lexeme {postings_allowed}
            ORDER BY impact DESC
            LIMIT {max_postings}
        ) p
    ),
    chunk_scores AS MATERIALIZED (
        SELECT p.chunk_id, sum({chunk_bm25}) AS score
        FROM postings p CROSS JOIN corpus
        GROUP BY p.chunk_id
    ),
    lexical_top AS (
        SELECT chunk_id FROM chunk_scores ORDER BY score DESC, chunk_id LIMIT {k}
    ),
    {vector_top},
    candidates AS (
        SELECT c.id AS chunk_id, c.file_id, c.heading_path, {verbatim_share} AS verbatim_share
        FROM vault_chunks c
        WHERE c.id IN (SELECT chunk_id FROM lexical_top UNION SELECT chunk_id FROM vector_top)
    ),
    -- Each candidate scored again with its section's BM25 added: the section's chunks as one text, their term
    -- frequencies and lengths summed (from the postings already read, so a lexeme's cut tail counts nowhere).
    -- A section's length counts only the chunks whose postings were read, as its term frequencies do.
    section_chunks AS (
        SELECT c.id, c.file_id, c.heading_path, c.lexeme_count FROM vault_chunks c
        WHERE (c.file_id, c.heading_path) IN (SELECT file_id, heading_path FROM candidates) {sections_allowed}
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
        SELECT t.file_id, t.heading_path, sum({section_bm25}) AS score
        FROM section_terms t JOIN section_lengths l USING (file_id, heading_path) CROSS JOIN corpus
        GROUP BY t.file_id, t.heading_path
    ),
    lexical AS (
        SELECT c.chunk_id, c.file_id, c.verbatim_share,
               coalesce(s.score, 0) + {section_weight} * coalesce(t.score, 0) AS score
        FROM candidates c
        LEFT JOIN chunk_scores s USING (chunk_id)
        LEFT JOIN section_scores t USING (file_id, heading_path)
    ),
    lexical_ranked AS (
        SELECT chunk_id, row_number() OVER (ORDER BY score DESC, chunk_id) AS rank
        FROM lexical WHERE chunk_id IN (SELECT chunk_id FROM lexical_top)
    ),
    {similarity},
    scored AS (
        SELECT c.chunk_id, c.file_id, c.verbatim_share, l.rank AS lexical_rank, v.rank AS vector_rank,
               c.score / best_possible.score AS lexical_share, s.similarity
        FROM lexical c
        CROSS JOIN best_possible
        LEFT JOIN lexical_ranked l USING (chunk_id)
        LEFT JOIN vector_top v USING (chunk_id)
        LEFT JOIN similarity s USING (chunk_id)
    ),
    -- A note's evidence: the best of each arm over its candidates, which may be different chunks (one matching the
    -- question's words, another its meaning).
    with_notes AS (
        SELECT *, max(coalesce(similarity, 0)) OVER note AS note_similarity,
               max(lexical_share) OVER note AS note_lexical_share
        FROM scored
        WINDOW note AS (PARTITION BY file_id)
    ),
    fused AS (
        SELECT chunk_id, lexical_rank, vector_rank, lexical_share, similarity, {fused_score} AS fused
        FROM with_notes
    )
    SELECT fused.chunk_id, c.file_id, c.chunk_index, fused.lexical_rank, fused.vector_rank, fused.fused,
           fused.lexical_share, fused.similarity
    FROM fused JOIN vault_chunks c ON c.id = fused.chunk_id
    ORDER BY fused.fused DESC, fused.chunk_id
    LIMIT {k}
"""

_ALLOWED = """allowed AS MATERIALIZED (
        SELECT c.id FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id
        CROSS JOIN (SELECT websearch_to_tsquery(secondbrain_ts_config(), secondbrain_parsable({constraint})) AS tsq)
            constraint_query
        WHERE {filters}
          -- A phrase with no word the index keeps ("...", "the") constrains nothing: it cannot be matched.
          AND ({constraint} = '' OR numnode(constraint_query.tsq) = 0 OR c.tsv @@ constraint_query.tsq)
    ),"""

# The ORDER BY repeats the partial index's expression and the WHERE its predicate, so the planner can use
# `vault_chunks_embedding_<dim>_idx` ({order} is that expression, or one no index provides: see `exact_order`).
_VECTOR_TOP = """vector_top AS (
        SELECT id AS chunk_id, 1 - distance AS similarity, row_number() OVER (ORDER BY distance, id) AS rank
        FROM (
            SELECT c.id, {embedding} <=> {query_vector} AS distance
            FROM vault_chunks c
            WHERE vector_dims(c.embedding) = {dimension} {vectors_allowed}
            ORDER BY {order}
            LIMIT {k}
        ) nearest
    )"""

# The vector arm's own candidates keep the similarity it found; the lexical arm's others (at most k rows, by primary
# key) get theirs computed here.
_SIMILARITY = """similarity AS (
        SELECT chunk_id, similarity FROM vector_top
        UNION ALL
        SELECT c.id, 1 - ({embedding} <=> {query_vector})
        FROM vault_chunks c
        WHERE c.id IN (SELECT chunk_id FROM lexical_top EXCEPT SELECT chunk_id FROM vector_top)
          AND vector_dims(c.embedding) = {dimension}
    )"""

_NO_VECTOR_TOP = (
    "vector_top AS (SELECT NULL::bigint AS chunk_id, NULL::float8 AS similarity, NULL::bigint AS rank WHERE false)"
)
_NO_SIMILARITY = "similarity AS (SELECT chunk_id, similarity FROM vector_top)"


def candidates_statement(
    query: str,
    k: int,
    filters: Filters,
    vector: np.ndarray | None,
    *,
    lexical: bool = True,
    fusion: Fusion = DEFAULT_FUSION,
) -> Statement:
    """The statement of the fused top `k` chunks for `query`; `vector` None leaves the vector arm empty, `lexical`
    False the BM25 arm. Run it with `vector_scan` when it has a vector arm."""
    parsed = LexicalQuery.parse(query)
    p = Params()
    scored = p.add(parsed.scored_text if lexical else "")
    constraint = p.add(parsed.constraint_text)
    k_param = p.add(k)
    restrict = bool(filters) or bool(parsed.constraint_text)

    def allowed(column: str) -> str:
        return f"AND {column} IN (SELECT id FROM allowed)" if restrict else ""

    own = fusion.sql(
        lexical_rank="lexical_rank", vector_rank="vector_rank", similarity="similarity", lexical_share="lexical_share"
    )
    # Note evidence and verbatim code join a hybrid ranking only: each arm alone is the baseline it is measured as.
    fused_score, verbatim_share = own, "0"
    if lexical and vector is not None:
        if tokens := code_tokens(query):
            patterns = p.add([pattern(token) for token in tokens])
            verbatim_share = (
                f"(SELECT count(*) FROM unnest({patterns}::text[]) AS v(pattern) "
                f"WHERE c.context || ' ' || c.content ~* v.pattern)::float8 / {len(tokens)}"
            )
        fused_score = fusion.hybrid_sql(
            own=own,
            note_similarity="note_similarity",
            note_lexical_share="note_lexical_share",
            verbatim_share="verbatim_share",
        )
    vector_top, similarity = _NO_VECTOR_TOP, _NO_SIMILARITY
    if vector is not None:
        dimension = int(vector.shape[0])
        embedding, query_vector = f"c.embedding::vector({dimension})", f"{p.add(vector)}::vector({dimension})"
        vector_top = _VECTOR_TOP.format(
            embedding=embedding,
            query_vector=query_vector,
            order=exact_order(f"{embedding} <=> {query_vector}", filters),
            dimension=dimension,
            vectors_allowed=allowed("c.id"),
            k=k_param,
        )
        similarity = _SIMILARITY.format(embedding=embedding, query_vector=query_vector, dimension=dimension)
    allowed_cte = _ALLOWED.format(filters=p.filters(filters, "f", "c"), constraint=constraint) if restrict else ""
    sql = _CANDIDATES.format(
        allowed=allowed_cte,
        scored=scored,
        constraint=constraint,
        postings_allowed=allowed("chunk_id"),
        max_postings=MAX_POSTINGS_PER_LEXEME,
        chunk_bm25=_bm25("p.idf", "p.tf", "p.length", "corpus.avgdl"),
        k=k_param,
        sections_allowed=allowed("c.id"),
        stand_in_min=STAND_IN_MIN_LETTERS,
        stand_in_letters=STAND_IN_ENDING_LETTERS,
        section_bm25=_bm25("t.idf", "t.tf", "l.length", "corpus.avgsection"),
        section_weight=SECTION_WEIGHT,
        saturated=(BM25_K1 + 1) * (1 + SECTION_WEIGHT),
        vector_top=vector_top,
        similarity=similarity,
        verbatim_share=verbatim_share,
        fused_score=fused_score,
    )
    return p.statement(sql)


async def hybrid_candidates(
    connection: asyncpg.Connection,
    query: str,
    k: int,
    filters: Filters,
    vector: np.ndarray | None,
    *,
    lexical: bool = True,
    fusion: Fusion = DEFAULT_FUSION,
    statement_timeout: float | None = None,
) -> list[Candidate]:
    """The fused top `k` chunks for one query; `vector` None skips the vector arm, `lexical` False the BM25 arm."""
    statement = candidates_statement(query, k, filters, vector, lexical=lexical, fusion=fusion)
    rows = await fetch(
        connection, statement, vector_scan=vector is not None, deadline=deadline_after(statement_timeout)
    )
    return [
        Candidate(
            r["chunk_id"],
            r["file_id"],
            r["chunk_index"],
            r["lexical_rank"],
            r["vector_rank"],
            float(r["fused"]),
            float(r["lexical_share"]),
            None if r["similarity"] is None else float(r["similarity"]),
        )
        for r in rows
    ]
