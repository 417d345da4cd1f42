"""How a count is said, in every message a person or a model reads: "1 chunk", "2 chunks", "0 notes"."""

from __future__ import annotations


def counted(number: int, noun: str, plural: str = "") -> str:
    """`number` and `noun`, in the plural (`plural`, else the noun and an s) unless it is one."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
