"""Reciprocal rank fusion across queries, and the fused-score expression the SQL statements use."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from secondbrain.retrieve.fusion import RRF_K, Candidate, fuse_queries, reciprocal_rank, rrf_sql


def candidate(chunk_id: int, lexical: int | None = None, vector: int | None = None) -> Candidate:
    return Candidate(chunk_id, file_id=1, chunk_index=chunk_id, lexical_rank=lexical, vector_rank=vector, fused=0.0)


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


@given(st.lists(st.lists(st.integers(1, 30), unique=True, max_size=10), min_size=1, max_size=4))
def test_fusion_is_a_permutation_of_the_union(rankings: list[list[int]]) -> None:
    fused = fuse_queries([[candidate(c) for c in ranking] for ranking in rankings])
    ids = [f.candidate.chunk_id for f in fused]
    assert sorted(ids) == sorted({c for ranking in rankings for c in ranking})
    scores = [f.score for f in fused]
    assert scores == sorted(scores, reverse=True)


def test_the_sql_expression_is_the_same_sum_an_arm_that_missed_adding_nothing() -> None:
    assert RRF_K == 60
    assert rrf_sql("l.rank", "v.rank") == "coalesce(1.0 / (60 + l.rank), 0) + coalesce(1.0 / (60 + v.rank), 0)"
