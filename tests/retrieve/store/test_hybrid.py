"""The hybrid chunk statement a chat turn runs per query (`secondbrain.retrieve.store.hybrid`), on a real PostgreSQL:
each arm alone and fused, search-box syntax and filters inside both arms, and a vector arm the HNSW index can serve.
The service's behaviour built on it is in tests/retrieve/test_service.py."""

from __future__ import annotations

import asyncpg
import numpy as np
import pytest
from pgvector.asyncpg import register_vector

from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.fusion import (
    DEFAULT_FUSION,
    NOTE_WEIGHT,
    VECTOR_WEIGHT,
    VERBATIM_WEIGHT,
    Candidate,
    Fusion,
)
from secondbrain.retrieve.store import LexicalQuery, Statement, candidates_statement, fetch, hybrid_candidates
from tests.retrieve.notes import NO_FILTERS, QUERY_VECTOR, note, write


def test_search_box_syntax_is_split_into_scored_words_and_constraints() -> None:
    parsed = LexicalQuery.parse('"vector store" choice -elasticsearch -"not this"')
    assert (
        parsed.constraint_text == '"vector store" "not this" -elasticsearch'
        or "-elasticsearch" in parsed.constraint_text
    )
    assert "elasticsearch" not in parsed.scored_text
    assert "vector store" in parsed.scored_text
    assert LexicalQuery.parse("plain words").constraint_text == ""


async def ranked(
    pool: asyncpg.Pool,
    query: str,
    vector: np.ndarray | None = QUERY_VECTOR,
    filters: Filters = NO_FILTERS,
    *,
    lexical: bool = True,
    k: int = 10,
    fusion: Fusion = DEFAULT_FUSION,
) -> list[tuple[str, Candidate]]:
    """(note path, candidate) in the statement's order."""
    async with pool.acquire() as connection:
        candidates = await hybrid_candidates(connection, query, k, filters, vector, lexical=lexical, fusion=fusion)
        rows = await connection.fetch("SELECT id, path FROM vault_files")
    path_of = {row["id"]: row["path"] for row in rows}
    return [(path_of[c.file_id], c) for c in candidates]


AIRSHIPS = (
    # Found by the lexical arm, but third by vector.
    note("zeppelin.md", "z", chunks=[(["Plan"], "The zeppelin hangar plan.", 0.6)]),
    # Nearest by vector, no shared word.
    note("airships.md", "a", chunks=[(["History"], "Rigid airships history.", 0.95)]),
    note("balloons.md", "b", chunks=[([], "Hot air balloons.", 0.9)]),
)


async def test_each_arm_ranks_and_the_fused_score_weighs_both_arms_scores(pool: asyncpg.Pool) -> None:
    await write(pool, *AIRSHIPS)
    lexical_only = await ranked(pool, "zeppelin", None)
    assert [(path, c.lexical_rank, c.vector_rank) for path, c in lexical_only] == [("zeppelin.md", 1, None)]
    # Alone, the lexical arm's score is its share of what the query could score, times the lexical weight.
    share = lexical_only[0][1].fused / (1 - VECTOR_WEIGHT)
    assert 0 < share <= 1

    fused = await ranked(pool, "zeppelin")
    assert [path for path, _ in fused] == ["zeppelin.md", "airships.md", "balloons.md"]
    zeppelin = fused[0][1]
    assert (zeppelin.lexical_rank, zeppelin.vector_rank) == (1, 3)
    assert zeppelin.fused == pytest.approx(VECTOR_WEIGHT * 0.6 + (1 - VECTOR_WEIGHT) * share)
    assert fused[1][1].fused == pytest.approx(VECTOR_WEIGHT * 0.95) and fused[1][1].lexical_rank is None

    vector_only = await ranked(pool, "zeppelin", lexical=False)
    assert [path for path, _ in vector_only] == ["airships.md", "balloons.md", "zeppelin.md"]
    assert all(c.lexical_rank is None for _, c in vector_only)
    assert [c.fused for _, c in vector_only] == pytest.approx([VECTOR_WEIGHT * s for s in (0.95, 0.9, 0.6)])


async def test_a_candidate_one_arm_did_not_reach_is_still_scored_by_it(pool: asyncpg.Pool) -> None:
    await write(pool, *AIRSHIPS)
    share = (await ranked(pool, "zeppelin", None))[0][1].fused / (1 - VECTOR_WEIGHT)
    # With k = 1 the vector arm finds only airships.md; zeppelin.md, the lexical arm's, gets its similarity (0.6)
    # computed, so it still outranks airships.md (0.95 alone) on both arms' evidence.
    fused = await ranked(pool, "zeppelin", k=1)
    assert [path for path, _ in fused] == ["zeppelin.md"]
    zeppelin = fused[0][1]
    assert (zeppelin.lexical_rank, zeppelin.vector_rank) == (1, None)
    assert zeppelin.fused == pytest.approx(VECTOR_WEIGHT * 0.6 + (1 - VECTOR_WEIGHT) * share)


WORKSHOP = (
    note("kitchen.md", "k", chunks=[(["Contractors"], "Joinery by Costa, quote 6,200 euros.", 0.1)]),
    note("trip.md", "t", chunks=[(["Budget"], "The flat costs 820 euros.", 0.1)]),
    note("road.md", "r", chunks=[([], "Twelve kilometers of road.", 0.1), ([], "Order 123456, version 2.0.12.", 0.1)]),
    # A made-up word whose shorter form ends in a letter outside ASCII.
    note("dessert.md", "d", chunks=[([], "A brûléex for two.", 0.1)]),
)


async def test_a_query_word_no_chunk_has_stands_for_a_near_indexed_form(pool: asyncpg.Pool) -> None:
    await write(pool, *WORKSHOP)

    async def lexical(query: str) -> list[str]:
        return [path for path, _ in await ranked(pool, query, None)]

    # The stemmer keeps "joiner" and "joinery" ("joineri") apart, and British and American spellings.
    assert await lexical("joiner") == ["kitchen.md"]
    assert await lexical("kilometres") == ["road.md"]
    # A word the index has is searched as it is ("costs" finds "cost", not "Costa"), and a short unknown word stands
    # for nothing: "cos" is not "cost" nor "costa".
    assert await lexical("costs") == ["trip.md"]
    assert await lexical("cos") == []
    # Words ending in a letter outside ASCII are looked up alike (the range's end is that letter's successor).
    assert await lexical("brûlé") == ["dessert.md"]
    # Numbers and versions stand for nothing: an ID the notes lack is not another ID.
    assert await lexical("12345") == []
    assert await lexical("2.0.1") == []
    # The stand-in scores as the word would, against the same best possible score.
    joiner = (await ranked(pool, "joiner", None))[0][1]
    joinery = (await ranked(pool, "joinery", None))[0][1]
    assert joiner.fused == pytest.approx(joinery.fused)


async def test_reciprocal_rank_fusion_is_the_other_choice(pool: asyncpg.Pool) -> None:
    await write(pool, *AIRSHIPS)
    fused = await ranked(pool, "zeppelin", fusion=Fusion("rrf"))
    assert [path for path, _ in fused] == ["zeppelin.md", "airships.md", "balloons.md"]
    assert fused[0][1].fused == pytest.approx(1 / 61 + 1 / 63)
    assert fused[1][1].fused == pytest.approx(1 / 61) and fused[1][1].lexical_rank is None


async def test_phrases_exclusions_and_filters_apply_inside_both_arms(pool: asyncpg.Pool) -> None:
    await write(
        pool,
        *AIRSHIPS,
        note("Fleet/zeppelin.md", "f", chunks=[([], "Zeppelin flights over the lake.", 0.1)]),
    )
    excluded = await ranked(pool, "zeppelin -hangar")
    assert {path for path, _ in excluded} == {"Fleet/zeppelin.md", "airships.md", "balloons.md"}
    phrase = await ranked(pool, '"zeppelin flights"')
    assert [(path, c.lexical_rank) for path, c in phrase] == [("Fleet/zeppelin.md", 1)]
    in_fleet = await ranked(pool, "zeppelin", filters=Filters.parse(folders=["Fleet"]))
    assert [(path, c.lexical_rank, c.vector_rank) for path, c in in_fleet] == [("Fleet/zeppelin.md", 1, 1)]


async def test_a_phrase_with_no_indexed_word_constrains_nothing(pool: asyncpg.Pool) -> None:
    # "..." and "the" have no lexeme to match: as constraints they let no chunk through, and a question quoting them
    # (`#[should_panic(expected = "...")]`) found nothing at all.
    await write(pool, *AIRSHIPS)
    for query in ('zeppelin "..."', 'the "the" zeppelin', '#[should_panic(expected = "...")] zeppelin'):
        found = await ranked(pool, query)
        assert found and found[0][0] == "zeppelin.md", query
    # A phrase with words still constrains.
    assert [path for path, _ in await ranked(pool, 'zeppelin "rigid airships"')] == ["airships.md"]


def own_score(candidate: Candidate) -> float:
    """A candidate's score from its own two arms, before its note's evidence and verbatim code join it."""
    return VECTOR_WEIGHT * (candidate.similarity or 0.0) + (1 - VECTOR_WEIGHT) * candidate.lexical_share


async def test_a_note_found_by_words_in_one_chunk_and_meaning_in_another_counts_both(pool: asyncpg.Pool) -> None:
    await write(
        pool,
        # The words in one chunk, the meaning in another.
        note(
            "hangar.md",
            "h",
            title="Airfield",
            chunks=[(["Plan"], "The zeppelin hangar plan.", 0.1), (["Why"], "Where the great ships rest.", 0.85)],
        ),
        # One chunk with some of both.
        note("kit.md", "k", title="Shelf", chunks=[([], "A zeppelin model kit for the shelf.", 0.78)]),
    )
    fused = await ranked(pool, "zeppelin hangar")
    by_path: dict[str, list[Candidate]] = {}
    for path, candidate in fused:
        by_path.setdefault(path, []).append(candidate)
    kit, meaning = by_path["kit.md"][0], max(by_path["hangar.md"], key=lambda c: c.similarity or 0)
    # Each chunk alone, the kit's would win.
    assert own_score(kit) > max(own_score(c) for c in by_path["hangar.md"])
    # With its note's evidence (its best similarity and its best BM25 share, from different chunks), hangar.md's
    # chunk of meaning ranks first.
    assert fused[0][1].chunk_id == meaning.chunk_id
    note_score = VECTOR_WEIGHT * 0.85 + (1 - VECTOR_WEIGHT) * max(c.lexical_share for c in by_path["hangar.md"])
    assert meaning.fused == pytest.approx((own_score(meaning) + NOTE_WEIGHT * note_score) / (1 + NOTE_WEIGHT))
    # A note of one chunk is its chunk's evidence: its score is its own.
    assert kit.fused == pytest.approx(own_score(kit))


async def test_a_chunk_with_the_questions_code_as_written_gains_on_one_with_only_its_words(pool: asyncpg.Pool) -> None:
    await write(
        pool,
        note("visibility.md", "v", chunks=[([], "Items marked pub(crate) are visible in the crate only.", 0.3)]),
        note("crates.md", "c", chunks=[([], "A pub fn in a crate is public: pub items, crate users.", 0.4)]),
    )
    fused = await ranked(pool, "what does pub(crate) mean")
    scores = {path: candidate for path, candidate in fused}
    visibility, crates = scores["visibility.md"], scores["crates.md"]
    assert own_score(crates) > own_score(visibility)
    assert [path for path, _ in fused] == ["visibility.md", "crates.md"]
    assert visibility.fused == pytest.approx(own_score(visibility) + VERBATIM_WEIGHT)
    assert crates.fused == pytest.approx(own_score(crates))
    # Each arm alone is the baseline it is measured as: no verbatim share.
    lexical = {path: c for path, c in await ranked(pool, "what does pub(crate) mean", None)}
    assert lexical["visibility.md"].fused == pytest.approx((1 - VECTOR_WEIGHT) * lexical["visibility.md"].lexical_share)


async def test_the_vector_arm_can_use_the_hnsw_index(pool: asyncpg.Pool, database_url: str) -> None:
    await write(pool, *AIRSHIPS)
    async with pool.acquire() as connection:
        await connection.execute("ANALYZE vault_files; ANALYZE vault_chunks")
    index_only = {"enable_seqscan": "off", "enable_bitmapscan": "off", "enable_sort": "off"}
    forced = await asyncpg.create_pool(
        database_url, min_size=1, max_size=1, init=register_vector, server_settings=index_only
    )
    try:
        sql, params = candidates_statement("zeppelin", 10, NO_FILTERS, QUERY_VECTOR)
        async with forced.acquire() as connection:
            explained = await fetch(connection, Statement(f"EXPLAIN {sql}", params), vector_scan=True)
        assert "vault_chunks_embedding_384_idx" in "\n".join(row[0] for row in explained)
    finally:
        await forced.close()
