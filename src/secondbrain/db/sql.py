"""SQL helpers every service's store shares."""

from __future__ import annotations


def like_escape(text: str) -> str:
    """`text` as a LIKE pattern that matches it literally: its `\\`, `%` and `_` escaped (`\\` is LIKE's escape)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
