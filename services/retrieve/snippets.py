"""A search hit's snippet: the block of the note around its best match, shaped so it reads as the note does.

A snippet is markdown a client renders (the web UI) or prints (the CLI), so it is built from whole blocks of the note,
never a run of words across them: a table row comes with its table's header (`| month | sow |`, `|---|---|`, the
row), a list item is the item with its marker, a paragraph is the paragraph with its hard wraps joined, a line of code
is that line as inline code. Only a paragraph or list item longer than the room is cut, at words, marked with "…".

The matched words come as ranges of code points, never as markers in the text (a marker such as `**` is also the
note's own bold). They are the words PostgreSQL's ts_headline marked in the text (its stemming decides what matched:
"tomato" for "tomatoes"), and the typed text itself where the note holds it as typed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from secondbrain.block_windows import delimiter_row, is_delimiter_row
from secondbrain.retrieve.store import MATCH_START, MATCH_STOP

SNIPPET_CHARS = 300

_WHITESPACE = re.compile(r"\s+")
_PADDING = re.compile(r"[ \t]{2,}")
_TABLE_LINE = re.compile(r"^[ \t>]*\|")
_LIST_ITEM = re.compile(r"^([ \t]*)([-+*]|\d{1,9}[.)])[ \t]+")
_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+")
_QUOTE = re.compile(r"^[ \t]*>[ \t]?")
_MARKED = re.compile(f"{MATCH_START}([^{MATCH_START}{MATCH_STOP}]*){MATCH_STOP}")


def build(source: str, headline: str | None, needle: str | None) -> tuple[str, list[tuple[int, int]]]:
    """The snippet of `source` (the note's best matching chunk, or its body) and its highlight ranges. `headline` is
    ts_headline's excerpt of `source` with the matched words marked; `needle` the typed text, when the note holds it
    as typed; both None for a note found by meaning alone, whose snippet is the start of `source`."""
    words = sorted({word for word in _MARKED.findall(headline or "") if word.strip()}, key=len, reverse=True)
    terms = [_term(word) for word in words]
    if needle:  # the typed text anywhere, inside a word too ("usters" in "clusters"), as the substring match finds it
        terms.insert(0, re.compile(re.escape(needle), re.IGNORECASE))
    anchor = _first_occurrence(source, terms)
    lines = source.split("\n")
    if anchor is None:
        line = next((number for number, text in enumerate(lines) if text.strip()), 0)
    else:
        line = source.count("\n", 0, anchor)
    text = _block(lines, line, terms)
    return text, _ranges(text, terms)


def _first_occurrence(text: str, terms: Iterable[re.Pattern[str]]) -> int | None:
    found = [match.start() for term in terms if (match := term.search(text))]
    return min(found) if found else None


def _term(term: str) -> re.Pattern[str]:
    """`term` case-insensitively, as a whole word where it starts or ends with a word character."""
    before = r"(?<!\w)" if term[:1].isalnum() or term[:1] == "_" else ""
    after = r"(?!\w)" if term[-1:].isalnum() or term[-1:] == "_" else ""
    return re.compile(before + re.escape(term) + after, re.IGNORECASE)


def _ranges(text: str, terms: Iterable[re.Pattern[str]]) -> list[tuple[int, int]]:
    """Where `terms` occur in `text`, in order, none overlapping (the longer term wins where two start together)."""
    spans = sorted(
        {
            (match.start(), match.end())
            for term in terms
            for match in term.finditer(text)
            if match.end() > match.start()
        },
        key=lambda span: (span[0], -span[1]),
    )
    ranges: list[tuple[int, int]] = []
    for start, end in spans:
        if not ranges or start >= ranges[-1][1]:
            ranges.append((start, end))
    return ranges


def _block(lines: list[str], line: int, terms: list[re.Pattern[str]]) -> str:
    """The block holding `lines[line]`, shaped as a snippet."""
    if _inside_fence(lines, line):
        return _inline_code(lines[line].strip())
    if _TABLE_LINE.match(lines[line]):
        table = _table(lines, line)
        if table is not None:
            return table
    item = _list_item(lines, line)
    if item is not None:
        marker, words = item
        return marker + _window(words, terms, room=SNIPPET_CHARS - len(marker))
    first, last = line, line
    while first > 0 and lines[first - 1].strip() and not _starts_block(lines[first]):
        first -= 1
    while last + 1 < len(lines) and lines[last + 1].strip() and not _starts_block(lines[last + 1]):
        last += 1
    paragraph = [_HEADING.sub("", _QUOTE.sub("", text)) for text in lines[first : last + 1]]
    return _window(_flatten(" ".join(paragraph)), terms, room=SNIPPET_CHARS)


def _starts_block(line: str) -> bool:
    return bool(_LIST_ITEM.match(line) or _TABLE_LINE.match(line) or _FENCE.match(line) or _HEADING.match(line))


def _inside_fence(lines: list[str], line: int) -> bool:
    """Whether `lines[line]` is inside a fenced code block (a fence line itself counts)."""
    opened: str | None = None
    for number, text in enumerate(lines[: line + 1]):
        fence = _FENCE.match(text)
        if fence is None:
            continue
        marker = fence.group(1)
        if opened is None:
            opened = marker
        elif marker[0] == opened[0] and len(marker) >= len(opened):
            if number == line:
                return True
            opened = None
    return opened is not None


def _inline_code(text: str) -> str:
    """`text` as inline code, with a fence of backticks longer than any run inside it."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else ""


def _table(lines: list[str], line: int) -> str | None:
    """The table holding `lines[line]` as its header, delimiter row and that row (the first row when the match is in
    the header); None when the lines around are not a table."""
    first, last = line, line
    while first > 0 and _TABLE_LINE.match(lines[first - 1]):
        first -= 1
    while last + 1 < len(lines) and _TABLE_LINE.match(lines[last + 1]):
        last += 1
    if last - first < 1 or not is_delimiter_row(lines[first + 1]):
        return None
    row = line if line >= first + 2 else first + 2
    shown = [_squeeze(lines[first]), delimiter_row(lines[first + 1].strip())]
    if row <= last:
        shown.append(_cut_row(_squeeze(lines[row])))
    return "\n".join(shown)


def _squeeze(line: str) -> str:
    """A table line without the padding editors align its columns with."""
    return _PADDING.sub(" ", line.strip())


def _cut_row(row: str) -> str:
    if len(row) <= SNIPPET_CHARS:
        return row
    cut = row.rfind(" ", 0, SNIPPET_CHARS)
    return row[: cut if cut > SNIPPET_CHARS // 2 else SNIPPET_CHARS].rstrip() + " …"


def _list_item(lines: list[str], line: int) -> tuple[str, str] | None:
    """The list item holding `lines[line]` (its marker line, or a wrapped line under it): its marker, without the
    indent, and its words with the hard wraps joined; None when the line is not in a list item."""
    start = line
    while not _LIST_ITEM.match(lines[start]):
        # A wrapped line of an item is indented under it; a blank line or an unindented one ends the search.
        if start == 0 or not lines[start].strip() or not lines[start][:1].isspace():
            return None
        start -= 1
    marker = _LIST_ITEM.match(lines[start])
    assert marker is not None
    indent = len(marker.group(1))
    end = start
    while end + 1 < len(lines):
        following = lines[end + 1]
        body_indent = len(following) - len(following.lstrip())
        if not following.strip() or _starts_block(following) or body_indent <= indent:
            break
        end += 1
    if line > end:
        return None
    words = " ".join([lines[start][marker.end() :], *lines[start + 1 : end + 1]])
    return marker.group(2) + " ", _flatten(words)


def _window(text: str, terms: list[re.Pattern[str]], room: int) -> str:
    """`text` cut to about `room` characters around its first matched term, at words, each cut marked with "…"."""
    if len(text) <= room:
        return text
    anchor = _first_occurrence(text, terms) or 0
    start = max(0, anchor - room // 3)
    if start:
        space = text.rfind(" ", 0, start + 1)
        start = space + 1 if space > 0 else start
    end = min(len(text), start + room)
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start + room // 2 else end
    return ("… " if start else "") + text[start:end].strip() + (" …" if end < len(text) else "")


def _flatten(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()
