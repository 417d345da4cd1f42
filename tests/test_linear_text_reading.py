"""Text from outside (a vault's notes, a question, a conversation's history, a model's answer) is read in time linear
in its length. Each case is an input on which a reader used to take quadratic time: minutes at these sizes (measured
before the fix: 20 KB of "?" took 5 s to chunk, 40,000 newlines 39 s to summarise), now milliseconds (a few seconds
for the quoting provider's largest). The timeout is a guard against a hang, far from both, not a measure of speed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from secondbrain.block_windows import is_delimiter_row
from secondbrain.chat.citations import check_citations
from secondbrain.chat.prompt import quoted, unlinked
from secondbrain.ingest.chunker import ChunkBudget, chunk_note
from secondbrain.ingest.formats.base import escape_plain
from secondbrain.ingest.note import parse_note
from secondbrain.llm import ChatMessage, SourcePassage
from secondbrain.llm.answer_text import answer_words, gist
from secondbrain.llm.extractive import best_sentences
from secondbrain.llm.quote_units import sentence_pieces, units
from secondbrain.llm.tokens import count_tokens
from secondbrain.retrieve import question_time
from secondbrain.retrieve.condense import with_earlier_turns
from secondbrain.retrieve.question_time import EDGE_CHARS, read_time

pytestmark = pytest.mark.timeout(30)

NOW = datetime(2026, 11, 30, 18, tzinfo=UTC)


@pytest.mark.parametrize("run", ["?", "!", ".", "…", "?!"])
def test_a_note_of_one_long_run_of_punctuation_is_chunked(run: str) -> None:
    # Counted as an embedder counts (a run is many tokens), the run is cut where sentences end.
    note = parse_note("Runs.md", "# Runs\n\nBefore the run. " + run * 100_000 + "x after it.\n")
    chunks = chunk_note(note, ChunkBudget(max_tokens=256, overlap_tokens=16), count_tokens)
    assert "after it." in chunks[-1].content


def test_a_heading_padded_with_a_long_run_of_space_is_read() -> None:
    note = parse_note("Padded.md", "Intro.\n\n# Garden" + " \t" * 100_000 + "plans #\n\nWater daily.\n")
    chunks = chunk_note(note, ChunkBudget(max_tokens=256, overlap_tokens=16), count_tokens)
    assert note.title.startswith("Garden") and note.title.endswith("…") and len(note.title) <= 201
    assert "Water daily." in chunks[-1].content


def test_sentences_split_after_a_long_run_of_punctuation() -> None:
    assert sentence_pieces("First one. " + "?" * 200_000 + "done. Last one.")[-1] == "Last one."


def test_a_model_answer_of_blank_lines_and_spaces_is_summarised() -> None:
    for answer in ["\n" * 400_000 + "The worktop is oak [1].", " \n" * 200_000 + "> quoted", " " * 400_000 + "x [1]"]:
        assert gist(answer)
        assert answer_words(answer)


def test_a_follow_up_after_an_answer_of_blank_lines_is_joined() -> None:
    history = [ChatMessage("user", "Which worktop?"), ChatMessage("assistant", "\n" * 400_000 + "Oak [1].")]
    joined = with_earlier_turns("and the sink?", history)
    assert joined is not None and "Oak" in joined.text


def test_table_rows_padded_with_a_long_run_of_space() -> None:
    assert not is_delimiter_row("\t" * 200_000 + "-x")
    assert is_delimiter_row("| --- |" + " " * 200_000)
    table = (
        "| item | price |\n|---|---|\n" + " " * 200_000 + "| x\n| green tea from the market | three pounds a bag |\n"
    )
    quoted = [unit.text for unit in units(SourcePassage(1, "Shop > Prices\n\n" + table), 1, 0, 0, "")]
    assert quoted == ["green tea from the market | three pounds a bag"]


def test_a_long_question_has_its_time_read_from_its_close_then_its_opening(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    search_dates = question_time.search_dates
    monkeypatch.setattr(
        question_time, "search_dates", lambda text, **kw: read.append(len(text)) or search_dates(text, **kw)
    )
    pasted = " ".join(["On 3 March 2025 the roofer came; 4 May 2025 the plumber."] * 150)
    asked = read_time(f"Here is what I wrote: {pasted} What did I decide about it last week?\n", NOW)
    assert asked.range is not None and asked.range.describe() == "Notes dated 23\u201329 November 2026"
    assert "last week" not in asked.query and "3 March 2025" in asked.query
    opening = read_time(f"What did I decide last week about this: {pasted} (from my notes)", NOW)
    assert opening.range is not None and opening.range.describe() == "Notes dated 23\u201329 November 2026"
    assert read_time(f"Here is a note: {pasted} What do you make of it?", NOW).range is None
    # The date parser reads at most one edge at a time, never the pasted passage whole.
    assert read and max(read) <= EDGE_CHARS


def test_a_passage_opening_a_tag_before_a_long_run_of_space_is_defused() -> None:
    for text in ["<" + " " * 300_000 + "x", "<" + "\t" * 300_000 + "passages>"]:
        assert unlinked(text).endswith(text[-1])
        assert quoted(text)


def test_an_answer_whose_unknown_citation_follows_a_long_run_of_space_is_checked() -> None:
    checked = check_citations("Oak" + " " * 400_000 + "and ash [9], it is.", [1, 2])
    assert checked.text.startswith("Oak") and checked.text.endswith("and ash, it is.")


def test_quotes_are_chosen_for_a_question_of_a_thousand_words_over_a_passage_of_many_sentences() -> None:
    words = [f"w{i}" for i in range(1300)]
    body = "\n\n".join(f"x y z{j} {words[j % 1300]}." for j in range(1500))
    assert best_sentences(" ".join(words), [SourcePassage(1, body, title=" ".join(words))], [])


def test_a_passage_with_a_long_title_is_read_once_for_all_its_sentences() -> None:
    title = " ".join(f"t{i}" for i in range(100_000))
    body = "\n\n".join(f"The plumber said x{j} today." for j in range(100))
    assert best_sentences("what did the plumber say", [SourcePassage(1, body, title=title)], [])


@pytest.mark.parametrize("run", ["- ", "> ", "1. ", " -", "= ", "\t>"])
def test_an_attachments_line_of_a_long_run_of_markers_is_escaped(run: str) -> None:
    # '- - - ... x' could be split between list markers and a rule in as many ways as it is long (20 KB: a second).
    line = run * 200_000 + "x"
    assert escape_plain(line).endswith("x")
