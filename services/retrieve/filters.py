"""Folder, tag, date and note filters (the design record's PARA scope, time, and "ask about this note"), validated
once and applied inside SQL (the store's `Params.filters` writes the clause).

A folder matches every note under it; a tag matches itself and its children (`project` matches `project/alpha`),
case-insensitively, as Obsidian does. A date range matches a passage whose date (its note's, or its dated heading's:
`secondbrain.ingest.note_dates`) meets it, and a note with such a passage. A notes filter matches the notes at those
vault-relative paths exactly (as passages, search hits and GetNoteLinks name them): a note and the notes it links to.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from secondbrain.errors import InvalidInput
from secondbrain.file_kinds import FILTER_TYPES

MAX_FILTERS = 20
# A note and the notes it links to ("ask about this note") are often more than 20; 200 paths of a few dozen characters
# each stay far under a request's size limit.
MAX_NOTE_FILTERS = 200
MAX_NOTE_PATH_CHARS = 1_024
_TAG = re.compile(r"^[\w/-]+$", re.UNICODE)


@dataclass(frozen=True)
class Filters:
    folders: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    date_from: date | None = None
    date_to: date | None = None
    notes: tuple[str, ...] = ()
    # Types of file (file_kinds.FILTER_TYPES: note, pdf, image, ...), lower case.
    file_types: tuple[str, ...] = ()

    @property
    def suffixes(self) -> tuple[str, ...]:
        """The file extensions the file types select."""
        return tuple(suffix for kind in self.file_types for suffix in FILTER_TYPES[kind])

    @classmethod
    def parse(
        cls,
        folders: Sequence[str] = (),
        tags: Sequence[str] = (),
        date_from: str = "",
        date_to: str = "",
        notes: Sequence[str] = (),
        file_types: Sequence[str] = (),
    ) -> Filters:
        """Validated filters; InvalidInput names the value that is wrong and how to write it."""
        if len(folders) > MAX_FILTERS or len(tags) > MAX_FILTERS:
            raise InvalidInput(f"at most {MAX_FILTERS} folders and {MAX_FILTERS} tags per request")
        if len(notes) > MAX_NOTE_FILTERS:
            raise InvalidInput(f"the notes filter names {len(notes)} notes; name at most {MAX_NOTE_FILTERS}")
        clean_folders = []
        for folder in folders:
            value = folder.strip().strip("/")
            parts = value.split("/")
            if not value or "\x00" in value or "\\" in value or any(part in ("", ".", "..") for part in parts):
                raise InvalidInput(
                    f"folder filter {folder!r} is not a vault folder: write it relative to the vault, like "
                    "'Projects' or 'Projects/Alpha', without '..'"
                )
            clean_folders.append(value)
        clean_tags = []
        for tag in tags:
            value = tag.strip().removeprefix("#").strip("/")
            if not value or not _TAG.match(value):
                raise InvalidInput(
                    f"tag filter {tag!r} is not a tag: write it like 'project' or '#project/alpha' (letters, digits, "
                    "'_', '-' and '/')"
                )
            clean_tags.append(value.lower())
        first, last = _day("date_from", date_from), _day("date_to", date_to)
        if first and last and first > last:
            raise InvalidInput(f"date_from {first.isoformat()} is after date_to {last.isoformat()}; swap them")
        clean_notes = tuple(dict.fromkeys(_note_path(note) for note in notes))
        clean_types = []
        for kind in file_types:
            value = kind.strip().lower()
            if value not in FILTER_TYPES:
                raise InvalidInput(f"file type filter {kind!r} is not a type of file: use {', '.join(FILTER_TYPES)}")
            clean_types.append(value)
        return cls(
            tuple(dict.fromkeys(clean_folders)),
            tuple(dict.fromkeys(clean_tags)),
            first,
            last,
            clean_notes,
            tuple(dict.fromkeys(clean_types)),
        )

    def __bool__(self) -> bool:
        return bool(self.folders or self.tags or self.date_from or self.date_to or self.notes or self.file_types)


def _note_path(path: str) -> str:
    """A note filter's path as the index names notes (vault-relative, '/'-separated, no '..'); InvalidInput says how
    to write one. Kept as given, spaces and all: it is compared with the index's paths exactly."""
    value = path
    parts = value.split("/")
    if (
        not value.strip()
        or len(value) > MAX_NOTE_PATH_CHARS
        or "\x00" in value
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise InvalidInput(
            f"note filter {path[:80]!r} is not a note of the vault: write its vault-relative path as search results "
            f"and passages name it, like 'Projects/Kitchen.md' (at most {MAX_NOTE_PATH_CHARS} characters, no '..')"
        )
    return value


def _day(name: str, value: str) -> date | None:
    if not value.strip():
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(f"{name} {value[:40]!r} is not a day: write it as YYYY-MM-DD, like 2026-01-20") from None


# The years an asker's moment may be in.
NOW_YEARS = (1900, 2999)


def parse_now(text: str) -> datetime | None:
    """The asker's moment as a client sent it (ISO 8601 with its UTC offset), None when none was sent."""
    if not text.strip():
        return None
    try:
        now = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidInput(
            f"now {text[:40]!r} is not a moment: write it as ISO 8601 with its UTC offset, like "
            "2026-11-30T18:00:00+00:00"
        ) from None
    if now.tzinfo is None:
        raise InvalidInput(f"now {text[:40]!r} has no UTC offset: add one, like +00:00, so its day is the asker's")
    if not NOW_YEARS[0] <= now.year <= NOW_YEARS[1]:
        # Days are counted from it ("last week", a range's margin), and the calendar ends at 9999.
        raise InvalidInput(
            f"now {text[:40]!r} is not in the years {NOW_YEARS[0]} to {NOW_YEARS[1]}: send the asker's own moment"
        )
    return now
