"""Small to big: span planning, overlap removal and the token budget (pure functions, no database)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from secondbrain.ingest.chunker import ChunkBudget, chunk_note
from secondbrain.ingest.note import parse_note
from secondbrain.retrieve.expand import (
    MIN_OVERLAP_CHARS,
    PassageText,
    assemble,
    plan_spans,
    span_heading,
    within_budget,
    without_overlap,
)
from secondbrain.retrieve.store import ChunkRow


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
    assert passage.heading_path == ["Intro … Usage"], "the label names both sections the span runs across"


def passage(rank: int, tokens: int) -> PassageText:
    return PassageText(
        path="n.md", title="N", heading_path=[], start_line=1, end_line=2, text="text", chunk_indexes=[rank],
        file_id=1, tokens=tokens, best_rank=rank,
    )  # fmt: skip


def test_budget_keeps_rank_order_skips_what_does_not_fit_and_always_keeps_the_best() -> None:
    kept = within_budget([passage(0, 50), passage(1, 80), passage(2, 30), passage(3, 10)], budget=100, limit=10)
    assert [p.best_rank for p in kept] == [0, 2, 3]
    assert [p.best_rank for p in within_budget([passage(0, 500)], budget=100, limit=10)] == [0]
    assert len(within_budget([passage(i, 1) for i in range(10)], budget=100, limit=3)) == 3


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


def test_a_spans_label_is_where_its_text_starts_and_where_it_runs_to() -> None:
    kitchen = "Kitchen Renovation"
    assert span_heading([kitchen, "Goal"], [kitchen, "Goal"]) == [kitchen, "Goal"]
    assert span_heading([kitchen, "Goal"], [kitchen, "Open questions"]) == [kitchen, "Goal … Open questions"]
    assert span_heading([kitchen], [kitchen, "Open questions"]) == [kitchen, "… Open questions"]
    assert span_heading([kitchen, "Goal", "Budget"], [kitchen, "Goal"]) == [kitchen, "Goal", "Budget"]
    assert span_heading([], ["Usage"]) == ["… Usage"]


def rows_of_chunked(text: str) -> dict[tuple[int, int], ChunkRow]:
    """The rows ingest would store for `text`, chunked with a small budget (tokens counted as words)."""
    chunks = chunk_note(
        parse_note("n1.md", text), ChunkBudget(max_tokens=40, overlap_tokens=8), lambda t: len(t.split())
    )
    return {
        (1, chunk.index): ChunkRow(
            chunk.index,
            1,
            chunk.index,
            list(chunk.heading_path),
            chunk.start_line,
            chunk.end_line,
            chunk.content,
            chunk.token_count,
            "n1.md",
            "n1",
        )
        for chunk in chunks
    }


@given(st.sampled_from(["```rust", "~~~", "> ```", "- ```python"]), st.integers(12, 60))
def test_windows_of_a_long_fence_join_back_into_the_fence_in_one_passage(opening: str, count: int) -> None:
    indent = "> " if opening.startswith(">") else "  " if opening.startswith("-") else ""
    closing = indent + opening.lstrip("> -")[:3]
    lines = [f"{indent}let value_{i} = compute({i}); // step {i}" for i in range(count)]
    block = "\n".join([opening, *lines, closing])
    available = rows_of_chunked(f"# T\n\n{block}\n")
    assert len(available) > 1, "the fence was cut into windows"
    (span,) = plan_spans([(1, 0)], available, radius=len(available), per_note=len(available))
    assert assemble(span, available).text == block


def test_windows_of_a_long_table_join_back_into_the_table_and_a_lone_window_keeps_its_header() -> None:
    header = "| month | job |\n|---|:---:|"
    rows = [f"| month {i} | sow the beans in row {i} |" for i in range(30)]
    available = rows_of_chunked(f"Intro.\n\n{header}\n" + "\n".join(rows) + "\n")
    windows = len(available) - 1
    assert windows > 1
    (whole,) = plan_spans([(1, 1)], available, radius=windows, per_note=windows + 1)
    assert assemble(whole, available).text == "Intro.\n\n" + header + "\n" + "\n".join(rows)
    (alone,) = plan_spans([(1, windows)], available, radius=0, per_note=1)
    assert assemble(alone, available).text.startswith(header + "\n")
    assert assemble(alone, available).text.endswith(rows[-1])
