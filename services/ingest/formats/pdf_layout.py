"""A PDF page's text read with its layout: lines with their type size, so headings show where the layout shows them,
and table rows with their cells apart.

PDFium's text page holds every character with its box, and breaks lines where the text does (its generated line
ends), in reading order. Two things of the layout are kept that the plain text loses:

- a line set clearly larger than the page's body text, short and worded, is a heading: the section a page is in
  when the PDF has no outline (`sections`);
- a gap between two characters of a line wider than the line is tall does not occur between words of running text
  but does between a table's cells (or a form's label and value), so it is kept as ` | `: a row reads as its cells,
  and `Alabama | 18,870 | 23,022` is not `Alabama 18,870 23,022` nor, where PDFium put no space, `0 00`.
"""

from __future__ import annotations

import ctypes
import re
from collections import Counter
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from secondbrain.ingest.formats.base import clean_text

# A gap between two characters of a line wider than this many times the line's height separates cells. Words are
# about a third of that apart; a justified line's widest gaps stay under one.
CELL_GAP = 1.0
CELL = " | "
# A line is a heading when its type is at least this many times the page's body type, it has letters and it is
# short: a title, not a pull quote or a poster's paragraph.
HEADING_RATIO = 1.2
HEADING_MAX_WORDS = 15
HEADING_MIN_LETTERS = 3
MAX_SECTION_CHARACTERS = 80
# A line on more than this share of a document's pages (and at least three) is its running head or foot.
RUNNING_SHARE = 0.3
# What a line that is a sentence or a label ends with: set large, it is a pull quote or a form's field, not a heading.
_NOT_HEADING_END = (".", ":", ",", ";")
# The marks PDFium puts at a line end where a word is hyphenated (U+0002 in newer releases, U+FFFE in older): the
# word goes on after them, on the next line, with no generated line break between.
_SOFT_HYPHENS = {0x02, 0xFFFE}
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class Line:
    """One line of a page as read: its text (cells joined by CELL) and its type size (the median height of its
    characters' boxes by their fonts, in points)."""

    text: str
    size: float

    @property
    def is_row(self) -> bool:
        return CELL in self.text


def page_lines(page: pdfium.PdfPage) -> list[Line]:
    """The page's lines, in PDFium's reading order."""
    textpage = page.get_textpage()
    try:
        return _lines(textpage.raw)
    finally:
        textpage.close()


def _lines(textpage: pdfium_c.FPDF_TEXTPAGE) -> list[Line]:
    lines: list[Line] = []
    characters: list[str] = []
    heights: list[float] = []
    # The previous character that is not a space: its right edge, and its type's height, which a gap is measured in
    # (a loose box is as tall as the font's ascent and descent, whatever the glyph).
    previous_right: float | None = None
    previous_height = 0.0
    box = pdfium_c.FS_RECTF()
    for index in range(pdfium_c.FPDFText_CountChars(textpage)):
        code = pdfium_c.FPDFText_GetUnicode(textpage, index)
        if code == 0x0A:
            _end_line(lines, characters, heights)
            previous_right = None
            continue
        if code == 0x0D or code in _SOFT_HYPHENS or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            continue
        character = chr(code)
        if character.isspace():
            characters.append(" ")
            continue
        if not pdfium_c.FPDFText_GetLooseCharBox(textpage, index, ctypes.byref(box)):
            characters.append(character)
            continue
        height = box.top - box.bottom
        if previous_right is not None and box.left - previous_right > CELL_GAP * max(previous_height, height):
            while characters and characters[-1] == " ":
                characters.pop()
            characters.append(CELL)
        characters.append(character)
        if height > 0:
            heights.append(height)
        previous_right, previous_height = box.right, height
    _end_line(lines, characters, heights)
    return lines


def _end_line(lines: list[Line], characters: list[str], heights: list[float]) -> None:
    text = "".join(characters).strip()
    if text:
        ordered = sorted(heights)
        lines.append(Line(text, ordered[len(ordered) // 2] if ordered else 0.0))
    characters.clear()
    heights.clear()


def page_text(lines: list[Line]) -> str:
    return "\n".join(line.text for line in lines)


def body_size(lines: list[Line]) -> float:
    """The page's body type: the size most of its characters are set in (to half a point)."""
    weights: Counter[float] = Counter()
    for line in lines:
        weights[round(line.size * 2) / 2] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def headings(lines: list[Line], running: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """The page's headings, each with the index of its first line: lines set at least HEADING_RATIO times the body
    type, short and worded, with the lines of one heading set on two (a long title) joined. A line in `running`
    (the document's running head) is none."""
    body = body_size(lines)
    found: list[tuple[int, str]] = []
    previous: int | None = None
    for index, line in enumerate(lines):
        if line.text in running or not _is_heading(line, body):
            previous = None
            continue
        text = " ".join(clean_text(line.text).split())
        if previous is not None and found and abs(lines[previous].size - line.size) < 0.5:
            start, title = found[-1]
            found[-1] = (start, f"{title} {text}"[:MAX_SECTION_CHARACTERS])
        else:
            found.append((index, text[:MAX_SECTION_CHARACTERS]))
        previous = index
    return found


def _is_heading(line: Line, body: float) -> bool:
    return (
        body > 0
        and line.size >= HEADING_RATIO * body
        and not line.is_row
        and len(line.text.split()) <= HEADING_MAX_WORDS
        and len(_LETTER.findall(line.text)) >= HEADING_MIN_LETTERS
        and not line.text.endswith(_NOT_HEADING_END)
    )


def sections(pages: list[list[Line]]) -> dict[int, str]:
    """Each page's section (pages numbered from 1) by its layout, for a PDF with no outline: the heading most of
    the page's text is under, text before a page's first heading being under the heading the page before ended in.
    A line on more than RUNNING_SHARE of the pages is the document's running head or foot, never a heading."""
    seen_on: Counter[str] = Counter()
    for lines in pages:
        seen_on.update({line.text for line in lines})
    running = frozenset(text for text, count in seen_on.items() if count >= 3 and count > RUNNING_SHARE * len(pages))
    named: dict[int, str] = {}
    carried: str | None = None
    for number, lines in enumerate(pages, start=1):
        kept = headings(lines, running)
        section = _most_of(lines, kept, carried)
        if kept:
            carried = kept[-1][1]
        if section:
            named[number] = section
    return named


def _most_of(lines: list[Line], found: list[tuple[int, str]], carried: str | None) -> str | None:
    if not found:
        return carried
    share: Counter[str | None] = Counter()
    starts = [start for start, _ in found]
    share[carried] += sum(len(line.text) for line in lines[: starts[0]])
    for position, (start, title) in enumerate(found):
        end = starts[position + 1] if position + 1 < len(starts) else len(lines)
        share[title] += sum(len(line.text) for line in lines[start:end])
    # A Counter keeps the order it first saw its keys in, so a tie goes to the section that comes first on the page;
    # text before the first heading of a PDF's first page is under no section, and the heading names it.
    most = max(share.values())
    return next(title for title, size in share.items() if size == most) or found[0][1]
