"""What the commands print, for a person at a terminal or for a program at the end of a pipe.

At a terminal an answer or a snippet is rendered markdown (headings, lists, bold, code; citations [n] as written),
wrapped at words to the terminal's width, and a wrapped line stays indented under its bullet or number. Into a pipe
(or a file) it is plain text: no colour codes, no line broken by the printer (a tag line or a note path stays whole),
an answer's markdown as the model wrote it. Rich decides which it is, so its variables count too: FORCE_COLOR (or
TTY_COMPATIBLE=1) renders for a terminal, COLUMNS sets the width, NO_COLOR leaves colour out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markdown import Markdown
from rich.segment import Segment
from rich.table import Table
from rich.text import Text


def stdout_console() -> Console:
    """The console a command writes its results to: rendered at a terminal, plain and unwrapped into a pipe."""
    return _unwrapped_unless_terminal(Console(highlight=False))


def stderr_console() -> Console:
    """The console a command says what it does on (progress, warnings): the same, on stderr."""
    return _unwrapped_unless_terminal(Console(stderr=True))


def _unwrapped_unless_terminal(console: Console) -> Console:
    if not console.is_terminal:
        console.soft_wrap = True
    return console


def markdown(console: Console, text: str) -> RenderableType:
    """`text` (markdown) as the console shows it: rendered at a terminal, as written into a pipe."""
    if console.is_terminal:
        return Markdown(text, hyperlinks=False)
    return Text(text)


def hanging(console: Console, lead: str, *parts: RenderableType) -> RenderableType:
    """`lead` ("1.", "[2]") and then `parts`, one under another; at a terminal every wrapped line of them starts under
    the first part, not at column 0. Into a pipe: the lead, a space and the first part on a line, each further line
    indented as far, none wrapped (`parts` are then text: `markdown` and `snippet_text` give text there)."""
    if console.is_terminal:
        grid = Table.grid(padding=(0, 1, 0, 0))
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        grid.add_row(Text(lead), Group(*parts))
        return grid
    indent = " " * (len(lead) + 1)
    lines: list[Text] = []
    for part in parts:
        text = part if isinstance(part, Text) else Text(str(part))
        for line in text.split("\n", allow_blank=True):
            lines.append(Text.assemble(lead + " " if not lines else indent if line.plain else "", line))
    return Text("\n").join(lines)


class MarkdownStream:
    """An answer written as it streams in. At a terminal each block (a paragraph, a list, a code block, a table) is
    rendered once it is whole: a blank line after it, outside a code block, says so; the rest when the stream ends.
    Into a pipe each piece is written at once, as it came."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.pending = ""
        self.blocks = 0
        self.written = False
        self.ends_a_line = False
        self.closed = False

    def write(self, text: str) -> None:
        if not text:
            return
        self.written = True
        self.ends_a_line = text.endswith("\n")
        if not self.console.is_terminal:
            self.console.file.write(text)
            self.console.file.flush()
            return
        self.pending += text
        end = _whole_blocks(self.pending)
        if end:
            self._render(self.pending[:end])
            self.pending = self.pending[end:]

    def close(self) -> None:
        """Render what is left (a terminal); into a pipe, end the answer's last line. Once; again does nothing."""
        if self.closed:
            return
        self.closed = True
        if self.console.is_terminal:
            self._render(self.pending)
            self.pending = ""
        elif self.written and not self.ends_a_line:
            self.console.file.write("\n")
            self.console.file.flush()

    def _render(self, text: str) -> None:
        if not text.strip():
            return
        if self.blocks:
            self.console.print()
        self.console.print(_Trimmed(Markdown(text.strip("\n"), hyperlinks=False)))
        self.blocks += 1


class _Trimmed:
    """A renderable without the blank lines rich puts around some blocks (a list starts with one): the stream puts
    one blank line between blocks itself, as between the paragraphs of one rendering."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.renderable, options, pad=False)
        blank = [not "".join(segment.text for segment in line).strip() for line in lines]
        first = blank.index(False) if False in blank else len(lines)
        last = len(lines) - blank[::-1].index(False) if False in blank else first
        for line in lines[first:last]:
            yield from line
            yield Segment.line()


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _whole_blocks(text: str) -> int:
    """Where the whole blocks of `text` end: after its last blank line outside a fenced code block; 0 if none."""
    end = 0
    fence = ""
    position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        if not line.endswith("\n"):
            break  # a line still being written
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
        elif opened:
            fence = opened.group(1)
        elif not line.strip():
            end = position
    return end


# Inline markdown in a snippet, each shown as the note's app shows it: **bold**, *italic*, `code`, [[link|alias]],
# [text](url). The snippet's highlights are ranges of its source, so this keeps where each character came from.
_INLINE = re.compile(
    r"(?P<bold>\*\*(?=\S)(?P<b>.+?)(?<=\S)\*\*|__(?=\S)(?P<u>.+?)(?<=\S)__)"
    r"|(?P<code>`(?P<c>[^`\n]+)`)"
    r"|(?P<italic>(?<![\w*])\*(?=[^\s*])(?P<i>[^*\n]+?)(?<=\S)\*(?![\w*])|(?<![\w_])_(?=\S)(?P<j>[^_\n]+?)(?<=\S)_(?!\w))"
    r"|(?P<wiki>\[\[(?:[^\]|\n]*\|)?(?P<w>[^\]\n]+)\]\])"
    r"|(?P<link>(?<!!)\[(?P<l>[^\]\n]+)\]\([^)\s]+\))"
)
_STYLES = {"bold": "bold", "code": "bold cyan", "italic": "italic", "wiki": "underline", "link": "underline"}
_BULLET = re.compile(r"^([ \t]*)[-+*](?=[ \t])", re.MULTILINE)


def snippet_text(console: Console, snippet: str, highlights: Iterable[tuple[int, int]], style: str) -> Text:
    """A search hit's snippet with its matched words in `style`. At a terminal its inline markdown is rendered (the
    markers left out, their text styled; a list item's `-` a bullet), the ranges kept on the same words; into a pipe
    it is the snippet as the note has it."""
    ranges = list(highlights)
    if not console.is_terminal:
        text = Text(snippet)
        for start, end in ranges:
            text.stylize(style, start, end)
        return text
    snippet = _BULLET.sub(lambda m: m.group(1) + "•", snippet)  # one character for one: the ranges hold
    text = Text()
    # starts[i], ends[i]: where the snippet's character i begins and ends in `text` (a marker, left out, has none:
    # both are where its text begins or ended).
    starts: list[int] = []
    ends: list[int] = []
    position = 0
    for match in _INLINE.finditer(snippet):
        _plain(text, starts, ends, snippet[position : match.start()])
        kind = match.lastgroup or ""
        inner_group = next(g for g in ("b", "u", "c", "i", "j", "w", "l") if match.group(g) is not None)
        inner_start, inner_end = match.span(inner_group)
        _marker(text, starts, ends, inner_start - match.start())
        _plain(text, starts, ends, snippet[inner_start:inner_end], _STYLES[kind])
        _marker(text, starts, ends, match.end() - inner_end)
        position = match.end()
    _plain(text, starts, ends, snippet[position:])
    for start, end in ranges:
        if 0 <= start < end <= len(snippet):
            text.stylize(style, starts[start], ends[end - 1])
    return text


def _plain(text: Text, starts: list[int], ends: list[int], part: str, style: str = "") -> None:
    starts.extend(range(len(text), len(text) + len(part)))
    ends.extend(range(len(text) + 1, len(text) + len(part) + 1))
    text.append(part, style)


def _marker(text: Text, starts: list[int], ends: list[int], length: int) -> None:
    starts.extend([len(text)] * length)
    ends.extend([len(text)] * length)
