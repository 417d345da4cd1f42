"""Windows of a code block or table too long for one chunk: how ingest frames them and how retrieval joins them.

Ingest cuts such a block into windows of whole lines, each repeating the block's frame (a fence's opening and closing
lines, a table's header and delimiter rows), so the embedder reads all of it and each window reads, and renders, as
the code or table it is. A table's delimiter row is repeated in its shortest form (`|---|:---:|`): padded to the
width of its column, as editors write it, it is hundreds of dashes, and a BERT tokenizer makes each dash a token, so
it alone would fill a window. When neighbouring windows meet again in one passage, they are joined back into one block.
"""

from __future__ import annotations

import re

# A fence's opening or closing line, inside a quote or list item or not: its marker run and what follows it.
_FENCE_LINE_RE = re.compile(r"^[\s>]*(?:[*+-]\s+|\d+[.)]\s+)?(`{3,}|~{3,})(.*)$")
# (`(?:\|\s*)?`, not `\|?\s*`: two whitespace runs side by side are tried every way, in quadratic time.)
_TABLE_DELIMITER_RE = re.compile(r"^[\s>]*(?:\|\s*)?:?-+:?\s*(?:\|\s*:?-+:?\s*)*(?:\|\s*)?$")


def frame(lines: list[str]) -> tuple[int, int]:
    """How many of a fence's or table's first and last `lines` each window repeats: a fence's opening line and its
    closing line when it has one; a table's header and delimiter rows."""
    opening = _FENCE_LINE_RE.match(lines[0])
    if opening is None:
        return min(2, len(lines)), 0
    closing = _FENCE_LINE_RE.match(lines[-1]) if len(lines) > 1 else None
    closes = closing is not None and closing.group(1)[0] == opening.group(1)[0] and not closing.group(2).strip()
    return 1, 1 if closes else 0


def is_delimiter_row(line: str) -> bool:
    """Whether `line` is a table's delimiter row (`|---|:---:|`, padded or not)."""
    return "-" in line and _TABLE_DELIMITER_RE.match(line) is not None


def delimiter_row(line: str) -> str:
    """A table's delimiter row in its shortest form, with the alignment colons and the quote or indent it sits in;
    any other line as it is."""
    if not is_delimiter_row(line):
        return line
    lead = line[: len(line) - len(line.lstrip(" \t>"))]
    cells = line[len(lead) :].strip().strip("|").split("|")
    return lead + "|" + "|".join(_aligned(cell.strip()) for cell in cells) + "|"


def _aligned(cell: str) -> str:
    return (":" if cell.startswith(":") else "") + "---" + (":" if cell.endswith(":") and len(cell) > 1 else "")


def join_windows(previous: str, following: str) -> str | None:
    """`previous` and `following` as one text when `following` is the next window of the code block or table that
    `previous` ends with, else None."""
    before, after = previous.split("\n"), following.split("\n")
    if _FENCE_LINE_RE.match(after[0]):
        closing = _FENCE_LINE_RE.match(before[-1]) if len(before) > 1 else None
        opened = next((line for line in reversed(before[:-1]) if _FENCE_LINE_RE.match(line)), None)
        if closing is not None and not closing.group(2).strip() and opened == after[0]:
            return "\n".join([*before[:-1], *after[1:]])
        return None
    if len(after) > 2 and "|" in after[0] and is_delimiter_row(after[1]):
        last_block = previous.rsplit("\n\n", 1)[-1].split("\n")
        if last_block[:2] == after[:2]:
            return "\n".join([*before, *after[2:]])
    return None
