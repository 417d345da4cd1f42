"""Checking an answer's `[n]` citations against the passages it was given.

A model told to cite only the numbers it was shown still sometimes writes one it was not ([9] of 8). Such a marker
points at nothing, so it is **stripped** from the stored answer (not merely flagged): the stored text, which later
turns read as history and which a client renders as links, then cites only passages that exist, and the numbers it
did cite are recorded with the message's sources. (The deltas already streamed are what the model wrote; a client
checks each [n] against the sources event, which it has, before linking it.)

A marker is `[n]` or `[n, m]` not glued to a word (`items[0]` is code, not a citation), not a `[[wikilink]]`, not a
markdown link's text (`[1](url)`), and not inside inline code or a fenced code block.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

_MARKER = re.compile(r"(?<![\w\[])\[(\d{1,4}(?:\s*,\s*\d{1,4})*)\](?![\](])")
# Fenced blocks (``` or ~~~, to the closing fence or the end) and inline code spans: left exactly as written.
_CODE = re.compile(r"(?ms)^(```|~~~).*?(?:^\1[^\n]*$|\Z)|`[^`\n]+`")


@dataclass(frozen=True)
class Checked:
    text: str
    """The answer with every marker to a missing passage removed."""
    cited: list[int]
    """The passage numbers the answer cites, in order of first citation."""
    removed: list[int]
    """The numbers it cited that no passage has, in order of first citation."""


def _check_prose(text: str, valid: Collection[int], cited: list[int], removed: list[int]) -> str:
    def replace(match: re.Match[str]) -> str:
        numbers = [int(part) for part in match.group(1).split(",")]
        kept = []
        for number in numbers:
            target = kept if number in valid else removed
            target.append(number)
            if number in valid and number not in cited:
                cited.append(number)
        return f"[{', '.join(map(str, kept))}]" if kept else "\0"

    checked = _MARKER.sub(replace, text)
    # A removed marker leaves no space before punctuation, no double space, and no indent at the start of a line.
    checked = re.sub(r"(?m)^\0[ \t]*", "", checked)
    # (From the start of a run of spaces only: tried from every space of a long run, this was quadratic.)
    return re.sub(r"(?<![ \t])[ \t]*\0", "", checked)


def check_citations(text: str, valid: Collection[int]) -> Checked:
    """`text` with citations of numbers outside `valid` stripped, and which numbers were cited."""
    valid = set(valid)
    cited: list[int] = []
    removed: list[int] = []
    pieces: list[str] = []
    position = 0
    for code in _CODE.finditer(text):
        pieces.append(_check_prose(text[position : code.start()], valid, cited, removed))
        pieces.append(code.group(0))
        position = code.end()
    pieces.append(_check_prose(text[position:], valid, cited, removed))
    return Checked("".join(pieces), cited, list(dict.fromkeys(removed)))


def replace_citations(text: str, replace: Callable[[list[int]], str]) -> str:
    """`text` with each citation marker (`[1]`, `[1, 3]`, by the rules above: code and links left alone) replaced
    by what `replace` makes of its numbers."""

    def prose(part: str) -> str:
        return _MARKER.sub(lambda match: replace([int(n) for n in match.group(1).split(",")]), part)

    pieces: list[str] = []
    position = 0
    for code in _CODE.finditer(text):
        pieces.append(prose(text[position : code.start()]))
        pieces.append(code.group(0))
        position = code.end()
    pieces.append(prose(text[position:]))
    return "".join(pieces)
