"""Citations to passages that do not exist are stripped; code and links are left alone."""

from __future__ import annotations

import pytest

from secondbrain.chat.citations import check_citations


@pytest.mark.parametrize(
    ("answer", "stored", "cited", "removed"),
    [
        ("Daily [1]. Weekly [2].", "Daily [1]. Weekly [2].", [1, 2], []),
        ("Daily [1]. Invented [9].", "Daily [1]. Invented.", [1], [9]),
        ("Both [1, 9] and [2][7].", "Both [1] and [2].", [1, 2], [9, 7]),
        ("[4] Opening.\n[5] Next.", "Opening.\nNext.", [], [4, 5]),
        ("Code `items[0]` and x[5] stay.", "Code `items[0]` and x[5] stay.", [], []),
        ("```python\nrow[9] = 1 [9]\n```\nSee [1].", "```python\nrow[9] = 1 [9]\n```\nSee [1].", [1], []),
        ("A [[Note]] and [9](http://x) link.", "A [[Note]] and [9](http://x) link.", [], []),
        ("No citations at all.", "No citations at all.", [], []),
    ],
)
def test_citations(answer: str, stored: str, cited: list[int], removed: list[int]) -> None:
    checked = check_citations(answer, valid=[1, 2, 3])
    assert (checked.text, checked.cited, checked.removed) == (stored, cited, removed)
