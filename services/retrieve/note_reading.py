"""Reading notes from the index (the GetNote, ListNotes, GetNoteLinks and GetFacets RPCs, and the note tools and the
reader built on them):
the request checked, the store read, a note's lines numbered as passages number them (by the file's lines, front
matter included) so a model can read on from a passage it was given.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import asyncpg

from secondbrain.errors import InvalidInput, NotFound
from secondbrain.retrieve import store
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.store import StoredLink
from secondbrain.retrieve.store.statement import deadline_after

# One read returns at most this many lines; `end_line` says where it stopped, so the caller can read on.
MAX_LINES_PER_READ = 2_000
DEFAULT_LIST_LIMIT = 100
MAX_LIST_LIMIT = 1_000
MAX_PATH_CHARS = 1_024
# Counting facets reads every note the filters let through once (tens of milliseconds for 10,000 notes).
FACETS_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class NoteText:
    path: str
    title: str
    text: str
    start_line: int
    end_line: int
    last_line: int
    tags: list[str]
    aliases: list[str]
    lines_known: bool
    # The front matter as a JSON object ("{}" for none), and the days the note is from and where that was read.
    properties_json: str = "{}"
    date: str = ""
    date_source: str = ""


@dataclass(frozen=True)
class NoteList:
    notes: list[store.ListedNote]
    total: int


@dataclass(frozen=True)
class NoteLinks:
    path: str
    outgoing: list[StoredLink]
    backlinks: list[StoredLink]


def checked_path(path: str) -> str:
    """`path` in Unicode NFC, as the index stores every note's (ingest's note_paths): a name macOS spells decomposed
    (NFD) is the same note; InvalidInput for an empty or overlong one."""
    if not path.strip():
        raise InvalidInput("the note path is empty: give a vault-relative path such as 'Projects/Kitchen.md'")
    if len(path) > MAX_PATH_CHARS:
        raise InvalidInput(f"the note path is {len(path)} characters long; a note's path is at most {MAX_PATH_CHARS}")
    return unicodedata.normalize("NFC", path)


def not_found(path: str, named: list[str] | None = None) -> NotFound:
    if named:
        return NotFound(f"the index holds no note at {path!r}; did you mean {' or '.join(map(repr, named))}?")
    return NotFound(
        f"the index holds no note at {path!r}: paths are vault-relative, with '.md', as search results and passages "
        "name them (list_notes shows what there is)"
    )


async def named_note(connection: asyncpg.Connection, path: str) -> str:
    """For a `path` no note is at: the one note it names as a wikilink would (`Projects/Kitchen Renovation`, a file
    name, a title, another case); NotFound naming the candidates otherwise."""
    named = await store.notes_named(connection, path)
    if len(named) == 1:
        return named[0]
    raise not_found(path, named)


async def read_note(pool: asyncpg.Pool, path: str, start_line: int = 0, end_line: int = 0) -> NoteText:
    """The note's lines `start_line`..`end_line` (file lines, inclusive; 0 for the body's first or the last line),
    at most MAX_LINES_PER_READ of them."""
    path = checked_path(path)
    if start_line < 0 or end_line < 0:
        raise InvalidInput("line numbers start at 1 (or 0 for the start or end of the note)")
    async with pool.acquire() as connection:
        note = await store.get_note(connection, path)
        if note is None:
            note = await store.get_note(connection, await named_note(connection, path))
    if note is None:  # deleted between the two reads
        raise not_found(path)
    lines = note.body.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the file's final newline ends its last line; it does not start another
    first = note.body_start_line or 1
    last = first + len(lines) - 1
    start = max(start_line or first, first)  # a line of the front matter reads from the body's first
    if start > last:
        raise InvalidInput(f"{path} ends at line {last}: ask for a start line from {first} to {last}")
    end = min(end_line or last, last, start + MAX_LINES_PER_READ - 1)
    if end < start:
        raise InvalidInput(f"the end line ({end_line}) is before the start line ({start}): give end_line >= start_line")
    return NoteText(
        path=note.path,
        title=note.title,
        text="\n".join(lines[start - first : end - first + 1]),
        start_line=start,
        end_line=end,
        last_line=last,
        tags=note.tags,
        aliases=note.aliases,
        lines_known=note.body_start_line is not None,
        properties_json=note.properties_json,
        date=note.date,
        date_source=note.date_source,
    )


async def list_notes(pool: asyncpg.Pool, filters: Filters, limit: int = 0, order: str = "path") -> NoteList:
    """The notes `filters` lets through, in `order` (see `store.note_reads.ORDERS`)."""
    if not 0 <= limit <= MAX_LIST_LIMIT:
        raise InvalidInput(f"limit is {limit}: ask for 1 to {MAX_LIST_LIMIT} notes, or 0 for {DEFAULT_LIST_LIMIT}")
    async with pool.acquire() as connection:
        notes, total = await store.list_notes(connection, filters, limit or DEFAULT_LIST_LIMIT, order)
    return NoteList(notes, total)


async def facets(pool: asyncpg.Pool, filters: Filters, timeout_seconds: float = FACETS_TIMEOUT_SECONDS) -> store.Facets:
    """The folders, tags and days the notes `filters` lets through can be browsed by, with their counts."""
    deadline = deadline_after(timeout_seconds)
    async with pool.acquire(timeout=timeout_seconds) as connection:
        return await store.facets(connection, filters, deadline)


async def note_links(pool: asyncpg.Pool, path: str) -> NoteLinks:
    path = checked_path(path)
    async with pool.acquire() as connection:
        links = await store.note_links(connection, path)
        if links is None:
            path = await named_note(connection, path)
            links = await store.note_links(connection, path)
    if links is None:
        raise not_found(path)
    return NoteLinks(path, *links)
