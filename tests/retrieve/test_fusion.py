"""Reciprocal rank fusion across queries, and the fused-score expressions the SQL statements use."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from secondbrain.retrieve.fusion import RRF_K, Candidate, Fusion, fuse_queries, reciprocal_rank, rrf_sql


def candidate(
    chunk_id: int, lexical: int | None = None, vector: int | None = None, *, note: int | None = None
) -> Candidate:
    """A chunk; by default the only chunk of a note of its own."""
    note = chunk_id if note is None else note
    return Candidate(chunk_id, file_id=note, chunk_index=chunk_id, lexical_rank=lexical, vector_rank=vector, fused=0.0)


def test_single_query_keeps_the_sql_fusion() -> None:
    ranking = [candidate(1), candidate(2)]
    assert [f.candidate.chunk_id for f in fuse_queries([ranking])] == [1, 2]


def test_a_chunk_found_by_every_phrasing_rises() -> None:
    first = [candidate(1, lexical=1), candidate(2, lexical=2), candidate(3, lexical=3)]
    second = [candidate(3, vector=1), candidate(4, vector=2)]
    fused = fuse_queries([first, second])
    assert [f.candidate.chunk_id for f in fused] == [3, 1, 2, 4], "2 and 4 tie; the earlier query's wins"
    three = fused[0].candidate
    assert (three.lexical_rank, three.vector_rank) == (3, 1), "best arm ranks over all queries"
    assert fused[0].score == reciprocal_rank(3) + reciprocal_rank(1) == 1 / 63 + 1 / 61


def test_a_chunk_whose_note_another_query_found_counts_that_note_s_rank() -> None:
    # The typed follow-up finds chunk 1 of note 7; the query with its history finds chunk 2 of the same note first.
    typed = [candidate(1, note=7), candidate(3)]
    with_history = [candidate(2, note=7), candidate(4), candidate(3)]
    fused = {f.candidate.chunk_id: f.score for f in fuse_queries([typed, with_history])}
    assert fused[1] == fused[2] == reciprocal_rank(1) + reciprocal_rank(1), "each found the note first"
    assert fused[3] == reciprocal_rank(2) + reciprocal_rank(3)
    assert fused[4] == reciprocal_rank(2), "note 4 was found by one query only"


@given(
    st.lists(st.lists(st.integers(1, 30), unique=True, max_size=10), min_size=1, max_size=4),
    st.integers(1, 10),
)
def test_fusion_is_a_permutation_of_the_union(rankings: list[list[int]], notes: int) -> None:
    fused = fuse_queries([[candidate(c, note=c % notes) for c in ranking] for ranking in rankings])
    ids = [f.candidate.chunk_id for f in fused]
    assert sorted(ids) == sorted({c for ranking in rankings for c in ranking})
    scores = [f.score for f in fused]
    assert scores == sorted(scores, reverse=True)


def test_the_sql_expression_is_the_same_sum_an_arm_that_missed_adding_nothing() -> None:
    assert RRF_K == 60
    assert rrf_sql("l.rank", "v.rank") == "coalesce(1.0 / (60 + l.rank), 0) + coalesce(1.0 / (60 + v.rank), 0)"


def test_the_weighted_expression_weighs_similarity_and_lexical_share() -> None:
    weighted = Fusion("weighted", 0.6).sql(lexical_rank="l", vector_rank="v", similarity="s", lexical_share="x")
    assert weighted == "0.6 * coalesce(s, 0) + 0.4 * x"
    assert Fusion("rrf").sql(lexical_rank="l", vector_rank="v", similarity="s", lexical_share="x") == rrf_sql("l", "v")
