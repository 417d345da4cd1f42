"""A passage read as the quoting provider quotes it (see `secondbrain.llm.extractive`): its quotable units.

A unit is a whole statement as the note's reader sees it: a sentence of a paragraph (its hard-wrapped lines joined
first), a list item (with its wrapped lines), a table row, or a code block. Headings and the chunk's "Title >
Heading" label are never quoted, but each unit keeps the stems of the headings above it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from secondbrain.date_sources import HEADING, MODIFIED, heading_date
from secondbrain.llm.quote_words import WORD, key_set
from secondbrain.llm.types import SourcePassage

MAX_QUOTE_CHARS = 400
# How retrieval writes the heading of a passage that starts in one section and runs into another (`first … last`).
SPAN_HEADING = "\u2026"
# A quote needs at least this many words, so a stray "Yes." or a label is never an answer.
MIN_QUOTE_WORDS = 3
# A code block is quoted whole or not at all, and only a short one: a screenful of code is not an answer to read.
MAX_CODE_LINES = 12
MAX_CODE_CHARS = 600

# Markdown structure, line by line (see `units`).
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([^`\s]*)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_RULE = re.compile(r"^\s{0,3}(?:(?:\*\s*){3,}|(?:-\s*){3,}|(?:_\s*){3,})$")
_TAGS_ONLY = re.compile(r"^\s*(?:#[^\s#]+\s*)+$")
_BLOCKQUOTE = re.compile(r"^\s*(?:>\s?)+")
_LIST_ITEM = re.compile(r"^(\s*(?:[-*+]|\d{1,9}[.)]))\s+(?:\[[ xX]\]\s+)?(.*)$")
_TABLE_ROW = re.compile(r"^\s*\|")
# (`\s*(?:\|\s*)?`, not `\s*\|?\s*`: two spaces' runs side by side are tried every way, in quadratic time.)
_TABLE_DELIMITER = re.compile(r"^\s*(?:\|\s*)?:?-+:?\s*(?:\|\s*:?-+:?\s*)*(?:\|\s*)?$")
# A link's target, defined at the foot of a note: `[name]: https://…`.
_LINK_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+\S+")

# A sentence ends at . ! or ? (and any closing quote, bracket or emphasis) followed by space; see `sentences`.
_SENTENCE_BREAK = re.compile(r"(?<![.!?])[.!?]++[\"'\u201d\u2019)\]*_]*\s+")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "dr", "mr", "mrs", "ms", "st", "approx", "ca", "fig"})
_CODE_SPAN = re.compile(r"`[^`\n]*`")
# A question: a "?" that ends the text or a clause, outside inline code (`{:?}` and the `?` operator ask nothing).
_ASKS = re.compile(r"\?[\"'\u201d\u2019)\]*_]*(?:\s|$)")

# Not answers: a sentence that opens as an indirect question ("Whether to tile ...", "How to ..."), and one that
# points the reader elsewhere ("See [[X]].", "Related: [[X]]") or tells them how to use the tool ("Ask the chat ...").
_INDIRECT_QUESTION = re.compile(r"^\W*(?:whether|(?:how|what|where|when|which|who|why) to)\b", re.IGNORECASE)
_TO_THE_READER = re.compile(
    r"^\W*(?:(?:see(?:\s+also)?|related|cf\.?)\b\W*\[\[|(?:ask|try|type|click|tap)\b.*\b(?:chat|vault|assistant|secondbrain)\b)",
    re.IGNORECASE,
)
# A note at the vault's root named README, index or Home describes the vault itself (its layout, what to ask it),
# not its owner's life: its words overlap every question a little and it answers none, so it is quoted last.
_VAULT_NOTES = frozenset({"readme", "index", "home"})

# Tiers of candidates, tried in order: a later tier is used only when no unit of an earlier one matches.
ANSWER, WEAK, ABOUT_THE_VAULT = 0, 1, 2
# Kinds of unit.
SENTENCE, ITEM, ROW, CODE = "sentence", "item", "row", "code"
PARAGRAPH = "paragraph"


def plain(text: str) -> str:
    return " ".join(text.split())


def is_about_the_vault(path: str) -> bool:
    note = PurePosixPath(path)
    return bool(path) and len(note.parts) == 1 and note.stem.lower() in _VAULT_NOTES


@dataclass(frozen=True)
class Unit:
    """A quotable statement of a passage: a sentence, a list item, a table row or a code block."""

    text: str
    """As quoted: a list item without its marker, a table row as `a | b`, a code block without its fences."""
    number: int
    order: int
    """The place among all the candidates: passages in the search's order, each in its own."""
    terms: frozenset[str]
    rank: int = 0
    """The passage's place in the search's order, 0 for the closest."""
    heading: frozenset[str] = frozenset()
    """The stems of the nearest heading (and a table row's header): what the section says it is about."""
    context: frozenset[str] = frozenset()
    """The stems of the note's title and the headings above the nearest one."""
    tier: int = ANSWER
    kind: str = SENTENCE
    block: int = 0
    """Units of one paragraph, list, table or code block share it (and only they, across all the candidates)."""
    position: int = 0
    """The place in the passage counting what is not quoted too: units next to each other differ by one."""
    marker: str = ""
    """A list item's marker with its indent (`-`, `  1.`), a code block's language."""
    day: str = ""
    """The day the note says the unit is from (YYYY-MM-DD): its innermost dated heading's (in the passage's text or
    the headings it starts under), else its note's (its file name's or front matter's; the last day of a weekly
    note's span); "" when neither dates it (a heading-dated log's preamble, a note dated only by its mtime)."""
    days: str = ""
    """The days it is from as the note gives them, for its label: `day`, or a note's span ("2026-01-19..2026-01-25",
    a weekly note) when no dated heading narrows it."""

    @property
    def indent(self) -> int:
        """How deep a list item is nested: the spaces before its marker."""
        return len(self.marker) - len(self.marker.lstrip())

    def introduces(self) -> bool:
        """Whether the unit ends with a colon: what follows (a list, code, an example) is what it says."""
        return self.kind != CODE and self.text.rstrip("*_ ").endswith(":")


def fits_code(code: str) -> bool:
    """Whether a code block is short enough to quote (whole: code is never cut)."""
    return len(code.splitlines()) <= MAX_CODE_LINES and len(code) <= MAX_CODE_CHARS


@dataclass
class _Reader:
    """Turns one passage into quotable units, keeping track of the headings above each."""

    passage: SourcePassage
    rank: int
    start: int
    block: int
    earlier: str
    """The conversation's earlier answers, whitespace collapsed: a unit they quoted is kept for when nothing new
    matches."""
    title: list[str] = field(default_factory=list)
    headings: dict[int, str] = field(default_factory=dict)
    """The headings above the next unit in the passage's text, by level: what its sections say they are about."""
    dated_headings: dict[int, str] = field(default_factory=dict)
    """The same, with the headings the passage starts under (`starting_headings`): what dates the next unit."""
    units: list[Unit] = field(default_factory=list)
    position: int = 0
    # The title's and upper headings' keys, by the headings: read once, not once per unit (a long title read for each
    # of hundreds of units took seconds).
    _context_keys: dict[tuple[str, ...], frozenset[str]] = field(default_factory=dict)

    def heading_keys(self, extra: str = "") -> tuple[frozenset[str], frozenset[str]]:
        levels = sorted(self.headings)
        nearest = self.headings[levels[-1]] if levels and levels[-1] > 1 else ""
        context = (*self.title, *(self.headings[level] for level in levels if self.headings[level] != nearest))
        if context not in self._context_keys:
            self._context_keys[context] = key_set(" ".join(context))
        return key_set(f"{nearest} {extra}"), self._context_keys[context]

    def skip(self) -> None:
        """Something not quoted comes next (a heading, a rule): the units on either side are not neighbours."""
        self.position += 1

    def add(self, text: str, kind: str, header: str = "", marker: str = "") -> None:
        self.position += 1
        text = text.strip() if kind != CODE else text.strip("\n")
        if len(WORD.findall(text)) < MIN_QUOTE_WORDS:
            return
        if kind != CODE and (_ASKS.search(_CODE_SPAN.sub("", text)) or _TO_THE_READER.search(text)):
            return
        heading, context = self.heading_keys(header)
        dated = (heading_date(self.dated_headings[level]) for level in sorted(self.dated_headings, reverse=True))
        under = next((found.isoformat() for found in dated if found is not None), "")
        day, days = (under, under) if under else self.note_days()
        tier = ABOUT_THE_VAULT if is_about_the_vault(self.passage.path) else ANSWER
        # An open question names what is not known yet, and a unit the conversation quoted was read already.
        if _INDIRECT_QUESTION.search(text) or "question" in heading or (self.earlier and plain(text) in self.earlier):
            tier = max(tier, WEAK)
        self.units.append(
            Unit(
                text,
                self.passage.number,
                self.start + len(self.units),
                key_set(text),
                self.rank,
                heading,
                context,
                tier,
                kind,
                self.block,
                self.position,
                marker,
                day,
                days,
            )
        )

    def note_days(self) -> tuple[str, str]:
        """The last day and the days of a unit under no dated heading: its note's, when the note dates it by its file
        name or front matter; none when the passage is dated by a heading the unit is not under (another section's
        day), or only by the file's modification time (`own_last_day` leaves that out already)."""
        passage = self.passage
        if not passage.date or passage.date_source in (HEADING, MODIFIED):
            return "", ""
        return passage.date, passage.days or passage.date

    def label(self, lines: list[str]) -> int:
        """How many lines the chunk's "Title > Heading" label takes at the start (0 or 1), its parts noted."""
        first = next((i for i, line in enumerate(lines) if line.strip()), None)
        if first is None:
            return 0
        line = lines[first].strip()
        title = self.passage.title.strip()
        followed_by_blank = first + 1 < len(lines) and not lines[first + 1].strip()
        looks_like_label = line == title or " > " in line
        if not followed_by_blank or not looks_like_label or line.endswith((".", "!", "?", ":", ";")):
            return 0
        *above, nearest = line.split(" > ")
        self.title.extend(above)
        if above:
            self.headings[2] = self.dated_headings[2] = nearest
        else:
            self.title.append(nearest)
        return first + 1


def sentences(text: str) -> list[str]:
    """`text` (one paragraph, lines joined) cut into sentences as `sentence_pieces` cuts it, but not before a
    sentence of fewer than MIN_QUOTE_WORDS words."""
    # A sentence too short to quote by itself ends the thought before it: a terse journal's "Easy 5 km, running the
    # whole way. Calf fine." is quoted whole, not without its answer. With no thought before it, it opens the one
    # after it: "Sintra day. Pena Palace at 10:00 as booked." is quoted with its opening.
    joined: list[str] = []
    opening = ""
    for piece in sentence_pieces(text):
        if len(WORD.findall(piece)) >= MIN_QUOTE_WORDS:
            joined.append(f"{opening} {piece}".strip())
            opening = ""
        elif joined:
            joined[-1] = f"{joined[-1]} {piece}"
        else:
            opening = f"{opening} {piece}".strip()
    return [*joined, opening] if opening else joined


def sentence_pieces(text: str, lowercase_starts: bool = False) -> list[str]:
    """`text` cut into its sentences, stripped: at . ! or ? followed by space, but not after "e.g.", nor (unless
    `lowercase_starts`, for terse notes typed without capitals) before a lowercase letter."""
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_BREAK.finditer(text):
        following = text[match.end() : match.end() + 1]
        # The word before the stop; abbreviations are short, so a few characters are enough to read it.
        last = re.search(r"([\w.]+?)\.*$", text[max(start, match.start() - 12) : match.start() + 1])
        if (following.islower() and not lowercase_starts) or (
            last is not None and last.group(1).lower().rstrip(".") in _ABBREVIATIONS
        ):
            continue
        pieces.append(text[start : match.end()])
        start = match.end()
    pieces.append(text[start:])
    return [piece.strip() for piece in pieces if piece.strip()]


def _cells(row: str) -> str:
    """A table row as `a | b | c`: the note's cells, without the outer pipes."""
    return plain(row.strip().strip("|"))


def starting_headings(headings: Sequence[str]) -> dict[int, str]:
    """The headings a passage's first line sits under (its `headings`, outermost first), by level: the passage's
    text starts below them, at level 2 for the first, as retrieval writes a later chunk's heading into a passage (a
    note's title is its level 1). A heading path's levels are not known: an H1 other than the title is in it too, so
    a journal's "# 6 October 2026" is taken for level 2 and a "## Evening" in the text ends it, leaving that
    section undated rather than dated wrong. A passage running into a later section has its last heading written
    `first … last` (`span_heading`): its text starts under the first."""
    found = {level: heading for level, heading in enumerate(headings, start=2)}
    if found:
        last = max(found)
        found[last] = found[last].split(SPAN_HEADING)[0].strip()
    return {level: heading for level, heading in found.items() if heading}


def units(passage: SourcePassage, rank: int, start: int, block: int, earlier: str) -> list[Unit]:
    """The quotable units of `passage`, in order, numbered from `start`, their blocks after `block`."""
    reader = _Reader(passage, rank, start, block, earlier, title=[passage.title] if passage.title else [])
    # The headings the passage starts under date its first units; their words are not the units' headings' (the
    # search matched the passage on its text).
    reader.dated_headings = starting_headings(passage.headings)
    lines = passage.text.splitlines()
    lines = lines[reader.label(lines) :]
    kind, buffer, marker, in_list = "", [], "", False

    def flush() -> None:
        nonlocal kind, buffer
        if kind == PARAGRAPH:
            for sentence in sentences(plain(" ".join(buffer))):
                reader.add(sentence, SENTENCE)
        elif kind == ITEM:
            item = plain(" ".join(buffer))
            # A list item is one statement, however it is wrapped; only one too long to quote is cut into sentences.
            for piece in [item] if len(item) <= MAX_QUOTE_CHARS else sentences(item):
                reader.add(piece, ITEM, marker=marker)
        elif kind == ROW:
            rows = [row for row in buffer if not _TABLE_DELIMITER.match(row)]
            header = ""
            if len(buffer) > 1 and _TABLE_DELIMITER.match(buffer[1]):
                header, rows = _cells(buffer[0]), rows[1:]
            # The header row names what each column holds: it is read with every row, as a heading would be.
            for row in rows:
                reader.add(_cells(row), ROW, header)
        kind, buffer = "", []

    def begin(new: str, first: str = "") -> None:
        """A block of kind `new` starts with the line `first`; the items of one list are one block."""
        nonlocal kind, buffer, in_list
        flush()
        if not (new == ITEM and in_list):
            reader.block += 1
        kind, buffer, in_list = new, [first] if first else [], new == ITEM

    def interrupt() -> None:
        """Something not quoted comes between (a heading, a rule): it ends the block, and the list."""
        nonlocal in_list
        flush()
        in_list = False
        reader.skip()

    fence, language, code = "", "", []
    for raw in lines:
        if fence:
            if raw.strip().startswith(fence):
                reader.add("\n".join(code), CODE, marker=language)
                fence, code = "", []
            else:
                code.append(raw)
            continue
        opened = _FENCE.match(raw)
        if opened:
            begin(CODE)
            fence, language = opened.group(1)[0] * 3, opened.group(2).split(",")[0]
            continue
        line = _BLOCKQUOTE.sub("", raw)
        heading = _HEADING.match(line)
        if heading or _RULE.match(line) or _TAGS_ONLY.match(line) or _LINK_DEFINITION.match(line):
            interrupt()
            if heading:
                level = len(heading.group(1))
                reader.headings = {k: v for k, v in reader.headings.items() if k < level}
                reader.headings[level] = heading.group(2)
                reader.dated_headings = {k: v for k, v in reader.dated_headings.items() if k < level}
                reader.dated_headings[level] = heading.group(2)
        elif not line.strip():
            # A blank line ends a paragraph but not a list: its items may be spaced out.
            flush()
        elif item := _LIST_ITEM.match(line):
            begin(ITEM, item.group(2))
            marker = item.group(1).expandtabs(4)
        elif _TABLE_ROW.match(line):
            if kind != ROW:
                begin(ROW)
            buffer.append(line)
        elif kind in (PARAGRAPH, ITEM):
            # A line that starts no block continues the paragraph or the list item above it (a hard wrap).
            buffer.append(line)
        else:
            begin(PARAGRAPH, line)
    flush()
    if fence:
        # The chunk ends inside a code block: what it holds may not be whole, so it is not quoted.
        reader.skip()
    return reader.units
