"""An answer in plain words: what a follow-up searches as the conversation's subject, and the list's gist."""

from __future__ import annotations

from secondbrain.llm.answer_text import GIST_CHARS, answer_words, gist
from secondbrain.llm.extractive import PREAMBLE, QUOTES_FOLLOW


def test_the_quoting_providers_own_words_and_the_markdown_are_not_the_gist() -> None:
    answer = f"{PREAMBLE}{QUOTES_FOLLOW}\n> - **Worktop**: a 30 mm quartz composite in pale grey [1]\n"
    assert gist(answer) == "Worktop: a 30 mm quartz composite in pale grey"
    assert answer_words(answer) == "- Worktop : a 30 mm quartz composite in pale grey"


def test_a_long_answer_is_cut_at_a_word() -> None:
    answer = "## Watering\n\n1. Water the tomatoes every morning before nine, " + "and then the beans " * 20 + "[2]."
    short = gist(answer)
    assert short.startswith("Water the tomatoes every morning") and short.endswith("…")
    assert len(short) <= GIST_CHARS + 1 and "[" not in short and "#" not in short


def test_an_answer_with_nothing_but_code_markers_is_its_code_words() -> None:
    assert gist("Use `cargo run` [1].") == "Use cargo run."
