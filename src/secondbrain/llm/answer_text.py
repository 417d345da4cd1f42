"""What an answer says about its subject, in plain words: without the quoting provider's own sentences ("No language
model is configured, ..."), citation markers and the markdown's own marks. A follow-up's search uses it as the
conversation's subject; the conversation list shows its first words as the conversation's gist."""

from __future__ import annotations

import re

from secondbrain.llm.extractive import quoted_only

# An answer's citation markers ([1], [2, 3]), block-quote markers, bold (`**Worktop**`; not `__`, which is also
# code's, as in `__init__`) and fence lines: numbers and punctuation, not its subject, and shown raw in the plan.
# A line's marks follow only spaces and tabs, and a citation's leading space is taken from the start of its run: a
# `\s*` that crosses lines, or starts at every space of a run, took quadratic time (40,000 newlines: 39 s).
_CITATIONS = re.compile(r"(?<!\s)\s*\[\d+(?:\s*,\s*\d+)*\]")
_QUOTE_MARKERS = re.compile(r"^[ \t]*>+", re.MULTILINE)
_EMPHASIS = re.compile(r"\*{2,}|^[ \t]*(?:```|~~~)\S*[ \t]*$", re.MULTILINE)
_HEADINGS = re.compile(r"^[ \t]*#{1,6}[ \t].*$", re.MULTILINE)
_LIST_MARKERS = re.compile(r"^[ \t]*(?:[-+*]|\d{1,9}[.)])[ \t]+", re.MULTILINE)

GIST_CHARS = 120


def answer_words(answer: str) -> str:
    """`answer` without the quoting provider's own sentences, citation markers and markdown marks, on one line."""
    return quoted_only(_EMPHASIS.sub(" ", _QUOTE_MARKERS.sub(" ", _CITATIONS.sub("", answer))))


def gist(answer: str) -> str:
    """The first words of `answer` as plain text, at most about GIST_CHARS, cut at a word ("…" where cut)."""
    text = _QUOTE_MARKERS.sub("", _CITATIONS.sub("", answer))
    text = _LIST_MARKERS.sub("", _HEADINGS.sub("", text))
    words = quoted_only(_EMPHASIS.sub(" ", text.replace("**", ""))).replace("`", "")
    if len(words) <= GIST_CHARS:
        return words
    cut = words.rfind(" ", 0, GIST_CHARS)
    return words[: cut if cut > GIST_CHARS // 2 else GIST_CHARS].rstrip(" ,;:") + "…"
