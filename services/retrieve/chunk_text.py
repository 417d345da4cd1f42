"""A stored chunk's text. Ingest writes each chunk as its `Title > Heading` line, a blank line, then the text: the
line is embedded and indexed with the text (so a chunk is found by its note's title and headings), but it is not
worth showing, since a passage or a hit carries the title and heading path already."""

from __future__ import annotations


def split_prefix(content: str) -> tuple[str, str] | None:
    """A chunk's first line (its `Title > Heading` prefix) and the text after the blank line; None without one."""
    first, separator, rest = content.partition("\n\n")
    return (first, rest) if separator else None


def body_of(content: str) -> str:
    """A chunk's text without its "Title > Heading" prefix line."""
    split = split_prefix(content)
    return content if split is None else split[1]


def without_prefix(content: str, title: str, heading_path: list[str]) -> str:
    """A chunk's text without its prefix line, when that line is recognisably the note's title and headings (a
    search hit's snippet keeps the chunk whole otherwise). Ingest may shorten a very long title, hence the loose
    test."""
    split = split_prefix(content)
    if split is None or "\n" in split[0]:
        return content
    first, rest = split
    if first == " > ".join((title, *heading_path)) or (title and first.startswith(title[:20])):
        return rest
    if heading_path and first.endswith(" > ".join(heading_path)):
        return rest
    return content
