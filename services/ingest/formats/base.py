"""What every attachment processor gives back, and how it becomes the text the index stores.

A processor reads one file's bytes and returns its text as `Part`s, each with the place a person would look for it
(a PDF's page, a slide, a sheet, a canvas card). `render` turns them into markdown: a level-1 heading with the
file's name (its title, so `[[paper.pdf]]` resolves to it by name), then a level-2 heading per part. From there an
attachment is indexed as a note is: chunked by heading, so every passage carries its place in its heading path
(`Manual.pdf > Page 12`), and `page_of_line` gives the page each line of the rendering came from.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

# Characters a PDF's text layer uses that are not text: PDFium marks a soft hyphen at a line end (U+FFFE in older
# releases, U+0002 in newer ones), so dropping the mark joins the word exactly; NUL cannot be stored.
_NOT_TEXT = str.maketrans({"\ufffe": None, "\x02": None, "\x00": None})
# What would read as markdown syntax at the start of a line of extracted text: a heading (an ATX '#', or a line of
# '=' or '-' alone under a line of text, which makes that line one: a PDF's equations have such lines), a fence,
# front matter; after any blockquote or list markers, inside which each of them is that syntax too ('>#' and
# '- # x' are headings). The markers are taken atomically, as many as there are, so a long line of '- - - ...' is
# read once, not once per way of splitting it between markers and a rule (that was quadratic: 20 KB took a second).
_LINE_SYNTAX = re.compile(r"^((?>(?:\s*+(?:>|[-*+](?=\s)|\d{1,9}[.)](?=\s)))*)\s*+)(#|```|~~~|=++\s*+$|-[-\s]*+$)")
# Control characters other than a line break or a tab: a font's glyphs with no Unicode meaning (PDFium gives them
# for a broken font map), never text.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
# A heading inside a part's own markdown (a canvas card's "# Plan"): shown in bold, so the part's heading stays the
# place a passage is cited by.
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$")
# Inline syntax that would make a wikilink or a tag out of a document's own text.
_INLINE_SYNTAX = re.compile(r"\[\[|(?:^|(?<=\s))#(?=[\w/-])")


class Unreadable(Exception):
    """The file cannot be read, with the reason a person reads in `status --files` (what it is, what to do)."""


@dataclass(frozen=True)
class Limits:
    """How much of a file a processor reads, from the vault's `ingest.*` settings (see IngestSection)."""

    max_pages: int = 2_000
    max_pixels: int = 50_000_000
    max_canvas_nodes: int = 10_000
    max_unzipped_bytes: int = 256 * 1024 * 1024
    max_sheet_cells: int = 200_000
    ocr: bool = True
    ocr_seconds: float = 60.0


@dataclass(frozen=True)
class Part:
    """A piece of a file's text and where it is: `heading` names the place ("Page 12", "Slide 3"), `page` is the
    PDF page or slide number when there is one. `markdown` says the text is markdown already (a canvas card, a
    table made here), so its syntax is kept; otherwise it is escaped as plain text."""

    heading: str
    text: str
    page: int | None = None
    markdown: bool = False


@dataclass
class Extracted:
    """A file's parts, the vault paths it shows (a canvas's file cards: links like a note's), and what of it could
    not be read, each a sentence for the file's status."""

    parts: list[Part] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)


def clean_text(text: str) -> str:
    """Extracted text as the index keeps it: NFKC (a ligature's letters), '\\n' line ends, PDFium's soft-hyphen
    marks and NULs dropped, trailing spaces and runs of blank lines trimmed."""
    text = unicodedata.normalize("NFKC", text.translate(_NOT_TEXT)).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROLS.sub("", text)
    lines = [line.rstrip() for line in text.split("\n")]
    kept: list[str] = []
    for line in lines:
        if line or (kept and kept[-1]):
            kept.append(line)
    return "\n".join(kept).strip("\n")


def escape_plain(text: str) -> str:
    """Plain text that reads as itself in markdown: no line of it becomes a heading, a fence or front matter, and no
    `[[` or `#word` in it becomes a link or a tag of the vault."""
    lines = []
    for line in text.split("\n"):
        line = _LINE_SYNTAX.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", line)
        lines.append(_INLINE_SYNTAX.sub(lambda m: "\\[\\[" if m.group() == "[[" else "\\#", line))
    return "\n".join(lines)


@dataclass(frozen=True)
class Rendering:
    """The markdown an attachment is indexed as, and the page of each of its lines (1-based; None: no page)."""

    text: str
    line_pages: tuple[int | None, ...]

    def pages_of(self, start_line: int, end_line: int) -> tuple[int | None, int | None]:
        """The first and last page the lines `start_line`..`end_line` (1-based, inclusive) come from."""
        pages = [page for page in self.line_pages[start_line - 1 : end_line] if page is not None]
        return (min(pages), max(pages)) if pages else (None, None)


def _headings_in_bold(markdown: str) -> str:
    return "\n".join(_HEADING_LINE.sub(lambda m: f"**{m.group(1)}**", line) for line in markdown.split("\n"))


def render(name: str, extracted: Extracted) -> Rendering:
    """`extracted` as markdown under the file's `name`, with the links it shows listed at the end."""
    lines: list[str] = [f"# {escape_plain(name)}"]
    pages: list[int | None] = [None]
    for part in extracted.parts:
        body = _headings_in_bold(part.text) if part.markdown else escape_plain(part.text)
        block = ["", f"## {escape_plain(part.heading)}", "", *body.split("\n")]
        lines.extend(block)
        pages.extend([part.page] * len(block))
    if extracted.links:
        block = ["", "## Files shown", "", *(f"- [[{link}]]" for link in extracted.links)]
        lines.extend(block)
        pages.extend([None] * len(block))
    return Rendering("\n".join(lines) + "\n", (*tuple(pages), None))
