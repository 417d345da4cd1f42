"""A note's body as markdown blocks grouped under the headings in force: what the chunker packs.

markdown-it reads the block structure (paragraphs, list items, quotes, fences, tables, headings) with the line range
of each; a line it drops (past its nesting limit) comes back as a paragraph, so no text is lost to the parser.

A line that is only a day in bold (`**25/11/26**`, `__Tue 10 Feb__`, as many write a log's entries) heads what
follows it as a heading one level below the headings in force would: the entries of a log are passages of their
own days.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from markdown_it import MarkdownIt

from secondbrain.date_sources import starts_with_day
from secondbrain.ingest.note import as_title

# Only the block structure is needed: skipping inline parsing makes markdown-it several times faster, and with
# reference definitions off, `[id]: url` lines stay ordinary paragraphs instead of vanishing from the tokens.
MARKDOWN = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join", "reference"])
ATOMIC_KINDS = frozenset({"fence", "table"})
# A bold day heads its entry below every markdown heading level (1-6).
DAY_LINE_LEVEL = 7
_BOLD_LINE = re.compile(r"^(\*\*|__)(?P<text>[^*_\n]{4,60})\1:?\s*$")
LIST_KINDS = frozenset({"bullet_list", "ordered_list"})


@dataclass
class Block:
    """A block from markdown-it: its kind, body line range [start, end) and nested blocks."""

    kind: str
    start: int
    end: int
    children: list[Block] = field(default_factory=list)
    heading_level: int = 0
    heading_text: str = ""

    def contains_code(self) -> bool:
        return self.kind in ATOMIC_KINDS or any(child.contains_code() for child in self.children)


@dataclass
class Section:
    """The blocks under one heading path (outermost first; the note's title is not in it)."""

    path: tuple[str, ...]
    blocks: list[Block]


class NoteBlocks:
    """One note body's blocks, by section; `lines` are the body's lines, which every range indexes."""

    def __init__(self, body: str, title: str) -> None:
        self.body = body
        self.title = title
        self.lines = body.split("\n")

    def sections(self) -> Iterator[Section]:
        """Top-level blocks grouped under the headings in force; lines markdown-it dropped become text blocks."""
        roots = block_tree(self.body, len(self.lines))
        stack: list[tuple[int, str]] = []
        section_start = 0
        blocks: list[Block] = []
        for node in self.with_day_lines(roots):
            if node.kind != "heading":
                blocks.append(node)
                continue
            yield Section(self.heading_path(stack), self.fill_gaps(blocks, section_start, node.start))
            while stack and stack[-1][0] >= node.heading_level:
                stack.pop()
            stack.append((node.heading_level, node.heading_text))
            section_start, blocks = node.end, []
        yield Section(self.heading_path(stack), self.fill_gaps(blocks, section_start, len(self.lines)))

    def with_day_lines(self, roots: list[Block]) -> Iterator[Block]:
        """`roots`, where a paragraph's first line is only a day in bold: that line as a heading of that day
        (DAY_LINE_LEVEL), then the paragraph's other lines."""
        for node in roots:
            match = _BOLD_LINE.match(self.lines[node.start].strip()) if node.kind == "paragraph" else None
            if match is None or not starts_with_day(match["text"]):
                yield node
                continue
            yield Block("heading", node.start, node.start + 1, heading_level=DAY_LINE_LEVEL, heading_text=match["text"])
            if node.end > node.start + 1:
                yield Block("paragraph", node.start + 1, node.end)

    def heading_path(self, stack: list[tuple[int, str]]) -> tuple[str, ...]:
        """Heading texts outermost first; an H1 that repeats the title is left out, it is already in the prefix."""
        title = " ".join(self.title.split()).casefold()
        return tuple(
            text
            for level, text in stack
            if text and not (level == 1 and " ".join(as_title(text).split()).casefold() == title)
        )

    def fill_gaps(self, nodes: list[Block], start: int, end: int) -> list[Block]:
        """`nodes` in line order, plus a text block for each run of non-blank lines in [start, end) they miss.

        markdown-it drops nothing in ordinary notes, but past its nesting limit (lists 20 deep) it skips content,
        and no text may be lost; overlapping ranges, if any, are clipped.
        """
        result: list[Block] = []
        cursor = start
        for node in sorted(nodes, key=lambda item: item.start):
            node_start = max(node.start, cursor)
            if node_start >= min(node.end, end):
                continue
            result.extend(self.text_runs(cursor, node_start))
            result.append(node if node_start == node.start else Block("paragraph", node_start, node.end))
            cursor = max(cursor, node.end)
        result.extend(self.text_runs(cursor, end))
        return result

    def text_runs(self, start: int, end: int) -> Iterator[Block]:
        """Each run of consecutive non-blank lines in [start, end) as a paragraph."""
        run_start = None
        for index in range(start, min(end, len(self.lines))):
            if self.lines[index].strip():
                run_start = index if run_start is None else run_start
            elif run_start is not None:
                yield Block("paragraph", run_start, index)
                run_start = None
        if run_start is not None:
            yield Block("paragraph", run_start, min(end, len(self.lines)))


def block_tree(body: str, line_count: int) -> list[Block]:
    """The top-level blocks of `body` with their nested blocks, from markdown-it's token stream.

    A parser failure must not lose a note, so it yields no blocks and every line becomes plain text instead.
    """
    # markdown-it treats a lone '\r' as a line break; a space keeps its line numbers equal to ours.
    source = body.replace("\r", " ") if "\r" in body else body
    try:
        tokens = MARKDOWN.parse(source)
    except Exception:  # A third-party parser on arbitrary text; losing structure beats losing the note.
        return []
    root = Block("root", 0, line_count)
    stack = [root]
    for token in tokens:
        if token.nesting == -1:
            if len(stack) > 1:
                stack.pop()
            continue
        if token.type == "inline":
            if stack[-1].kind == "heading":
                stack[-1].heading_text = " ".join(token.content.split())
            continue
        kind = token.type.removesuffix("_open")
        start, end = token.map if token.map else (0, 0)
        node = Block(kind, min(start, line_count), min(end, line_count))
        if kind == "heading":
            node.heading_level = int(token.tag[1:]) if token.tag[1:].isdigit() else 1
        if token.map:
            stack[-1].children.append(node)
        if token.nesting == 1:
            stack.append(node)
    return root.children
