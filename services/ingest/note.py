"""Parsing one note: front matter, title, tags and wikilinks, without ever failing on what a person wrote.

A vault is hand-written text, so nothing here raises: a problem that does not stop us reading the note (broken
YAML, an unterminated front matter block) becomes a human-readable warning on the result and parsing carries on.
The scan is one regex pass per line with code fences and inline code masked out, which keeps a 1 MB note well
under a second and avoids the quadratic corners of a single big regex.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml


@dataclass(frozen=True)
class WikiLink:
    """One `[[target#heading|alias]]` or `![[embed]]`, as written, with the file line it is on."""

    target: str
    heading: str
    alias: str
    is_embed: bool
    line: int


@dataclass(frozen=True)
class ParsedNote:
    """A note split into the parts ingest stores: metadata from the front matter and prose for the chunker."""

    path: str
    title: str
    body: str
    body_start_line: int
    frontmatter: dict[str, Any]
    aliases: list[str]
    tags: list[str]
    links: list[WikiLink]
    warnings: list[str]
    content_hash: str


_FRONT_MATTER_OPEN = "---"
_FRONT_MATTER_CLOSE = ("---", "...")
# Bounds on what we copy out of YAML, so an alias bomb ("billion laughs") or a self-referencing anchor cannot blow
# up memory or recursion: real front matter is a few dozen values.
_MAX_FRONT_MATTER_NODES = 10_000
_MAX_FRONT_MATTER_DEPTH = 50
# The largest front matter read (`ingest.max_front_matter_bytes`'s default): YAML parses at about 0.4 s a megabyte
# with libyaml and 3.6 s in pure Python (a planted 4 MB block cost 14 s of ingest's CPU for one note), and real front
# matter is a few hundred bytes. A larger block is not read, with a warning, and the note's body is indexed.
MAX_FRONT_MATTER_BYTES = 64 * 1024
# libyaml's safe loader where PyYAML was built with it (its wheels are): the same documents, about 8x faster.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# A fence may sit inside a blockquote or an indented list item, so leading spaces and '>' markers are allowed.
_FENCE_RE = re.compile(r"^(?:[ \t]*>)*[ \t]*(`{3,}|~{3,})(.*)$")
_ATX_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
# (Its spaces are taken from the start of their run: tried at every space of a long run, it was quadratic.)
_ATX_CLOSING_RE = re.compile(r"(?:^|(?<![ \t])[ \t]+)#+[ \t]*$")
_BACKTICKS_RE = re.compile(r"`+")
_WIKILINK_RE = re.compile(r"(!?)\[\[([^\[\]\n]+)\]\]")
# Obsidian's tag rule: '#' at the start of a line or after whitespace, then letters, digits, '_', '-', '/'.
_TAG_RE = re.compile(r"(?:^|(?<=\s))#([\w/-]+)")
_TAG_SPLIT_RE = re.compile(r"[,\s]+")


def parse_note(path: str, text: str, max_front_matter_bytes: int = MAX_FRONT_MATTER_BYTES) -> ParsedNote:
    """Parse one note's text; never raises, problems become `warnings`. A front matter over
    `max_front_matter_bytes` is not read (a warning says so).

    Line endings are normalised to '\\n' (as `read_note_text` already does) so line numbers agree with the chunker;
    `content_hash` is over the text exactly as given, so it changes whenever the file does.
    """
    content_hash = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    lines = _normalise_newlines(text.removeprefix("\ufeff")).split("\n")
    warnings: list[str] = []

    block_end = _front_matter_end(lines)
    if block_end is None and lines[0].rstrip() == _FRONT_MATTER_OPEN:
        warnings.append("unterminated front matter: the '---' on line 1 has no closing '---'; read as body text")
    block = lines[1:block_end] if block_end is not None else []
    size = len("\n".join(block).encode("utf-8", "surrogatepass"))
    if size > max_front_matter_bytes:
        warnings.append(
            f"the front matter is {size:,} bytes, over the {max_front_matter_bytes:,}-byte limit "
            "(ingest.max_front_matter_bytes): not read, so its title, tags, aliases, links and dates are ignored; the "
            "body is indexed"
        )
        block = []
    frontmatter: dict[str, Any] = _load_front_matter(block, warnings) if block else {}
    body_index = block_end + 1 if block_end is not None else 0
    body_lines = lines[body_index:]
    body_start_line = body_index + 1

    masked = list(_masked_body_lines(body_lines))
    links = _front_matter_links(block)
    links.extend(_links_in(body_lines, masked, body_start_line))
    return ParsedNote(
        path=path,
        title=_title(path, frontmatter, body_lines, masked, warnings),
        body="\n".join(body_lines),
        body_start_line=body_start_line,
        frontmatter=frontmatter,
        aliases=_aliases(frontmatter),
        tags=_dedupe_casefold([*_front_matter_tags(frontmatter), *_inline_tags(masked)]),
        links=links,
        warnings=warnings,
        content_hash=content_hash,
    )


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _front_matter_end(lines: list[str]) -> int | None:
    """Index of the closing delimiter line, or None when the note has no (terminated) front matter block."""
    if lines[0].rstrip() != _FRONT_MATTER_OPEN:
        return None
    for index in range(1, len(lines)):
        if lines[index].rstrip() in _FRONT_MATTER_CLOSE:
            return index
    return None


def _load_front_matter(block: list[str], warnings: list[str]) -> dict[str, Any]:
    """The YAML mapping, made JSON-safe; {} with a warning when it is not one."""
    try:
        loaded = yaml.load("\n".join(block), Loader=_YAML_LOADER)  # a safe loader: libyaml's or PyYAML's own
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = error.problem or error.context or "invalid YAML"
        warnings.append(f"malformed front matter{where}: {problem}; front matter ignored")
        return {}
    except Exception as error:  # PyYAML raises plain ValueError/RecursionError on some inputs; never fail a note.
        warnings.append(f"malformed front matter: {error}; front matter ignored")
        return {}
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        warnings.append(f"front matter is a {type(loaded).__name__}, not a mapping of keys to values; ignored")
        return {}
    try:
        return _json_safe(loaded, _NodeBudget())
    except _TooComplex:
        warnings.append("front matter is too large or refers to itself (YAML anchors); ignored")
        return {}


class _TooComplex(Exception):
    pass


class _NodeBudget:
    def __init__(self) -> None:
        self.left = _MAX_FRONT_MATTER_NODES

    def spend(self, depth: int) -> None:
        self.left -= 1
        if self.left < 0 or depth > _MAX_FRONT_MATTER_DEPTH:
            raise _TooComplex


def _json_safe(value: Any, budget: _NodeBudget, depth: int = 0) -> Any:
    """YAML values as JSON can hold them (string keys, ISO dates), because front matter is stored as jsonb."""
    budget.spend(depth)
    if isinstance(value, dict):
        return {str(key): _json_safe(item, budget, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [_json_safe(item, budget, depth + 1) for item in value]
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


# What masked text is replaced by: neither whitespace nor a character of a tag or a link, so what follows a code
# span or a link reads as it does in Obsidian ("`x`#a" and "[[x]]#a" make no tag; a space would have made one).
_MASK = "\x00"


def _masked_body_lines(lines: list[str]) -> Iterator[str]:
    """Each body line with code (fenced blocks, inline spans) masked, so tags and links are only found in prose.

    Masking keeps column positions, and an empty string stands for a line inside a fence.
    """
    fence: tuple[str, int] | None = None
    for line in lines:
        match = _FENCE_RE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= fence[1] and not match[2].strip():
                fence = None
            yield ""
        elif match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            fence = (match.group(1)[0], len(match.group(1)))
            yield ""
        else:
            yield _mask_inline_code(line)


def _mask_inline_code(line: str) -> str:
    """Blank out `code spans`: a run of n backticks up to the next run of exactly n, as CommonMark pairs them.

    Linear: for every run we precompute the next run of the same length instead of searching forward each time.
    """
    if "`" not in line:
        return line
    runs = [(match.start(), match.end()) for match in _BACKTICKS_RE.finditer(line)]
    next_same: list[int | None] = [None] * len(runs)
    last_seen: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        next_same[index] = last_seen.get(length)
        last_seen[length] = index
    pieces: list[str] = []
    kept_from = 0
    index = 0
    while index < len(runs):
        closing = next_same[index]
        if closing is None:
            index += 1
            continue
        start, end = runs[index][0], runs[closing][1]
        pieces.append(line[kept_from:start])
        pieces.append(_MASK * (end - start))
        kept_from = end
        index = closing + 1
    pieces.append(line[kept_from:])
    return "".join(pieces)


# A longer title is not one a person reads as a title (a first heading that is a paragraph, or a planted megabyte,
# which every passage of the note would carry into the prompt): it is cut there, ending in '…'.
MAX_TITLE_CHARS = 200


def as_title(text: str) -> str:
    """`text` as a note's title: at most MAX_TITLE_CHARS, else cut there with '…'."""
    return text if len(text) <= MAX_TITLE_CHARS else text[:MAX_TITLE_CHARS].rstrip() + "…"


def _title(path: str, frontmatter: dict[str, Any], body: list[str], masked: list[str], warnings: list[str]) -> str:
    return as_title(_whole_title(path, frontmatter, body, masked, warnings))


def _whole_title(
    path: str, frontmatter: dict[str, Any], body: list[str], masked: list[str], warnings: list[str]
) -> str:
    """Front matter `title`, else the first level-1 ATX heading outside code, else the file name."""
    title = frontmatter.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    if title is not None:
        warnings.append("front matter `title` is not a non-empty string; using the first heading or the file name")
    for original, visible in zip(body, masked, strict=True):
        if not visible:
            continue
        match = _ATX_HEADING_RE.match(original)
        if match and len(match.group(1)) == 1:
            heading = _ATX_CLOSING_RE.sub("", match.group(2) or "").strip()
            if heading:
                return heading
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def _aliases(frontmatter: dict[str, Any]) -> list[str]:
    """`aliases`/`alias` as a list; a string is one alias, since names like "Smith, Jane" contain commas."""
    found: list[str] = []
    for key in ("aliases", "alias"):
        for item in _as_list(frontmatter.get(key)):
            alias = str(item).strip()
            if alias and alias not in found:
                found.append(alias)
    return found


def _front_matter_tags(frontmatter: dict[str, Any]) -> list[str]:
    """`tags`/`tag`: a list, or one string of comma or space separated tags; a leading '#' is dropped."""
    found: list[str] = []
    for key in ("tags", "tag"):
        value = frontmatter.get(key)
        items = _TAG_SPLIT_RE.split(value) if isinstance(value, str) else _as_list(value)
        for item in items:
            if isinstance(item, dict | list):
                continue
            tag = str(item).strip().lstrip("#").strip()
            if tag:
                found.append(tag)
    return found


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return [item for item in value if item is not None]
    return [value]


def _inline_tags(masked: Iterable[str]) -> Iterator[str]:
    for line in masked:
        if "#" not in line:
            continue
        for match in _TAG_RE.finditer(_WIKILINK_RE.sub(_masked, line)):
            tag = match.group(1).rstrip("/")
            # "#123" is an issue number, not a tag: Obsidian wants at least one non-numeric character.
            if any(char.isalpha() for char in tag):
                yield tag


def _masked(match: re.Match[str]) -> str:
    return _MASK * (match.end() - match.start())


def _dedupe_casefold(tags: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    unique: list[str] = []
    for tag in tags:
        key = tag.casefold()
        if key not in seen:
            seen.add(key)
            unique.append(tag)
    return unique


def _front_matter_links(block: list[str]) -> list[WikiLink]:
    """Links written in properties (`related: "[[Other]]"`): Obsidian counts them, so the link graph should too."""
    return [link for offset, line in enumerate(block) for link in _parse_links(line, offset + 2)]


def _links_in(lines: list[str], masked: list[str], first_line: int) -> Iterator[WikiLink]:
    """Links in the body: found on the masked lines, which skips code, and read from the lines themselves (a code
    span inside a link, `[[a `b`]]`, is the link's own text, not the mask)."""
    for offset, (line, visible) in enumerate(zip(lines, masked, strict=True)):
        if "[[" in visible:
            yield from _parse_links(visible, first_line + offset, line)


def _parse_links(line: str, line_number: int, original: str | None = None) -> Iterator[WikiLink]:
    """The links `line` makes, their text taken from `original` at the same places when given (masking keeps
    columns)."""
    text = line if original is None else original
    for match in _WIKILINK_RE.finditer(line):
        link = _split_link(text[match.start(2) : match.end(2)], match.group(1) == "!", line_number)
        if link is not None:
            yield link


def _split_link(inner: str, is_embed: bool, line_number: int) -> WikiLink | None:
    """`target#heading|alias`; in tables the pipe is escaped as `\\|`, so a trailing backslash is dropped."""
    reference, _, alias = inner.partition("|")
    reference = reference.removesuffix("\\")
    target, _, heading = reference.partition("#")
    target, heading, alias = target.strip(), heading.strip(), alias.strip()
    if not target and not heading:
        return None
    return WikiLink(target=target, heading=heading, alias=alias, is_embed=is_embed, line=line_number)
