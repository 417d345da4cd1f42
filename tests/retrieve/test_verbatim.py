"""The code a question quotes (`secondbrain.retrieve.verbatim`): which tokens are code, and the patterns that find
them as written. How a hybrid ranking uses them is in tests/retrieve/store/test_hybrid.py."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from secondbrain.retrieve.verbatim import MAX_TOKENS, code_tokens, pattern


@pytest.mark.parametrize(
    ("question", "tokens"),
    [
        ("pub(crate) vs pub(super) vs pub(in path)", ("pub(crate)", "pub(super)", "pub(in")),
        ("What does Rc::downgrade do?", ("rc::downgrade",)),
        ("#[derive(Debug)] prints my struct all on one line", ("#[derive(debug)]",)),
        ("Is Ctrl+Shift+F the shortcut for search?", ("ctrl+shift+f",)),
        ("ob sync --continuous vs just ob sync", ("--continuous",)),
        ("What does `iter().any(|x| x > 2)` return?", ("iter().any(|x| x > 2)",)),
        ("why is u64 not enough (for this)?", ()),
        ("error E0597 in FnMut when I borrow", ()),
        ("let x: u64 = read_lines()?", ("read_lines()",)),
        ("What does the `as` keyword do with `type`?", ()),
        ("How do I embed one note inside another?", ()),
        ("Is macro_rules! hard?", ("macro_rules!",)),
        ("What Node.js version do I need, 1.5?", ()),
    ],
)
def test_code_is_told_from_prose(question: str, tokens: tuple[str, ...]) -> None:
    assert code_tokens(question) == tokens


def test_a_token_is_found_as_written_and_not_inside_a_longer_word() -> None:
    def found(token: str, text: str) -> bool:
        return re.search(pattern(token), text, re.IGNORECASE) is not None

    assert found("pub(crate)", "Items marked pub(crate) are visible")
    assert not found("pub(crate)", "a pub item in a crate")
    assert found("u64", "let x: u64 = 1;") and not found("u64", "a u640 register")
    assert found("fnmut", "impl FnMut for") and not found("fnmut", "FnMutable")
    assert found("--continuous", "run `ob sync --continuous` to watch")
    assert found("e0597", "error[E0597]: borrowed value")


@given(st.text(max_size=300))
def test_any_question_gives_few_tokens_each_found_in_the_question_itself(question: str) -> None:
    tokens = code_tokens(question)
    assert len(tokens) <= MAX_TOKENS
    for token in tokens:
        assert re.search(pattern(token), question.lower()) is not None, token
