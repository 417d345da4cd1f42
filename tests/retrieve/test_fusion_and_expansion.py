"""Focused tests of the pure parts: fusion across queries, span planning, overlap removal, the token budget."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from secondbrain.retrieve.expand import (
    MIN_OVERLAP_CHARS,
    PassageText,
    assemble,
    body_of,
    plan_spans,
    within_budget,
    without_overlap,
)
from secondbrain.retrieve.fusion import fuse_queries
from secondbrain.retrieve.store import Candidate, ChunkRow, LexicalQuery


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


@given(st.lists(st.lists(st.integers(1, 30), unique=True, max_size=10), min_size=1, max_size=4))
def test_fusion_is_a_permutation_of_the_union(rankings: list[list[int]]) -> None:
    fused = fuse_queries([[candidate(c) for c in ranking] for ranking in rankings])
    ids = [f.candidate.chunk_id for f in fused]
    assert sorted(ids) == sorted({c for ranking in rankings for c in ranking})
    scores = [f.score for f in fused]
    assert scores == sorted(scores, reverse=True)


def row(index: int, text: str, file_id: int = 1, heading: str = "H", tokens: int = 10) -> ChunkRow:
    return ChunkRow(index + 100 * file_id, file_id, index, [heading], index * 10 + 1, index * 10 + 9,
                    f"Note > {heading}\n\n{text}", tokens, f"n{file_id}.md", f"Note {file_id}")  # fmt: skip


def test_neighbours_merge_into_one_span_and_overlap_is_not_repeated() -> None:
    shared = "This sentence is carried over as overlap between chunks."
    available = {
        (1, 0): row(0, "Opening words of the note. " + shared),
        (1, 1): row(1, shared + " The winning sentence is here."),
        (1, 2): row(2, "Closing words of the note."),
    }
    spans = plan_spans([(1, 1)], available, radius=1, per_note=5)
    assert [(s.first, s.last) for s in spans] == [(0, 2)]
    passage = assemble(spans[0], available)
    assert passage.text.count(shared) == 1
    assert passage.chunk_indexes == [0, 1, 2]
    assert (passage.start_line, passage.end_line) == (1, 29)


def test_adjacent_winners_share_a_span_and_the_cap_per_note_holds() -> None:
    available = {(1, i): row(i, f"chunk {i} text") for i in range(10)}
    spans = plan_spans([(1, 2), (1, 3), (1, 8)], available, radius=1, per_note=4)
    assert [(s.first, s.last) for s in spans] == [(1, 4)]
    assert sum(s.last - s.first + 1 for s in spans) <= 4


def test_a_neighbour_in_another_section_gets_its_heading() -> None:
    available = {(1, 0): row(0, "First part text.", heading="Intro"), (1, 1): row(1, "Second.", heading="Usage")}
    passage = assemble(plan_spans([(1, 0)], available, 1, 5)[0], available)
    assert "## Usage\n\nSecond." in passage.text
    assert passage.heading_path == ["Intro"]


def passage(rank: int, tokens: int) -> PassageText:
    return PassageText(1, "n.md", "N", [], 1, 2, "text", [rank], tokens, rank)


def test_budget_keeps_rank_order_skips_what_does_not_fit_and_always_keeps_the_best() -> None:
    kept = within_budget([passage(0, 50), passage(1, 80), passage(2, 30), passage(3, 10)], budget=100, limit=10)
    assert [p.best_rank for p in kept] == [0, 2, 3]
    assert [p.best_rank for p in within_budget([passage(0, 500)], budget=100, limit=10)] == [0]
    assert len(within_budget([passage(i, 1) for i in range(10)], budget=100, limit=3)) == 3


def test_body_of_drops_the_prefix_line() -> None:
    assert body_of("Title > Heading\n\nThe text.\n\nMore.") == "The text.\n\nMore."


def test_search_box_syntax_is_split_into_scored_words_and_constraints() -> None:
    parsed = LexicalQuery.parse('"vector store" choice -elasticsearch -"not this"')
    assert (
        parsed.constraint_text == '"vector store" "not this" -elasticsearch'
        or "-elasticsearch" in parsed.constraint_text
    )
    assert "elasticsearch" not in parsed.scored_text
    assert "vector store" in parsed.scored_text
    assert LexicalQuery.parse("plain words").constraint_text == ""


def overlap_by_definition(previous: str, following: str) -> str:
    """The longest start of `following`, at least MIN_OVERLAP_CHARS long, that `previous` ends with, found by trying
    every length: the definition, too slow for the service."""
    for size in range(min(len(previous), len(following)), MIN_OVERLAP_CHARS - 1, -1):
        if previous.endswith(following[:size]):
            return following[size:].lstrip()
    return following


# Few letters, so that repeats, near-misses and overlaps of every length are common.
texts = st.text(alphabet="ab .", max_size=120)


@given(texts, texts, texts)
def test_overlap_removal_matches_its_definition(before: str, shared: str, after: str) -> None:
    previous, following = before + shared, shared + after
    assert without_overlap(previous, following) == overlap_by_definition(previous, following)
