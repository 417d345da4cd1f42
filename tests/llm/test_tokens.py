"""Token budgets, counted offline with the bundled cl100k_base."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from secondbrain.llm import ChatMessage
from secondbrain.llm.tokens import (
    count_message_tokens,
    count_tokens,
    fit_history,
    truncate_to_tokens,
)


def test_counts_like_cl100k() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0
    assert count_tokens("<|endoftext|>") > 1, "special tokens in user text are counted as text, not refused"


def test_history_keeps_the_newest_that_fit() -> None:
    history = [ChatMessage("user" if i % 2 == 0 else "assistant", f"message number {i} " * 10) for i in range(10)]
    each = count_message_tokens(history[:1])
    kept = fit_history(history, budget=each * 3 + 1)
    assert kept == history[-2:], "three fit, but a kept history must not start with the assistant"
    assert fit_history(history, budget=10_000) == history
    assert fit_history(history, budget=0) == []


@given(
    st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.text(max_size=80)), max_size=12),
    st.integers(min_value=0, max_value=400),
)
def test_fitted_history_is_a_suffix_within_budget(raw: list, budget: int) -> None:
    history = [ChatMessage(role, text) for role, text in raw]
    kept = fit_history(history, budget)
    assert count_message_tokens(kept) <= budget
    assert kept == history[len(history) - len(kept) :]
    assert not kept or kept[0].role == "user"


@given(st.text(max_size=300), st.integers(min_value=0, max_value=50))
@example("0:\u094d\u0900", 3)  # a cut inside a character once decoded to more tokens than the limit
def test_truncation_is_a_prefix_within_the_limit(text: str, limit: int) -> None:
    cut = truncate_to_tokens(text, limit)
    assert count_tokens(cut) <= limit
