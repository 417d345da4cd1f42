"""When a note, and each passage of it, is from: read from the note itself, as a person reading the vault would.

A note's date comes from the first of these that says one:
1. its file name, as Obsidian's daily notes and the Periodic Notes plugin name them: a day (`2026-01-20`, also with
   words after it, `2026-01-20 Standup`; or `20260120`), a week (`2026-W04`), a month (`2026-01`), a quarter
   (`2026-Q1`): a span of days;
2. its front matter: `date`, then `created`, then `updated` or `modified`, as Obsidian's properties and common
   templates write them (a YAML date, or text starting with an ISO date, time and zone allowed);
3. the file's modification time, the last resort (its day in UTC).

A passage under a dated heading (`## 2026-01-20`, `## 20 January 2026`, `## Monday, January 20, 2026`: a running
log) is from that heading's day, the innermost dated heading winning; any other passage is from its note's date.
Each date is kept with its source, so a reader (and the status) can tell a journal's own day from a file's mtime.
A front matter value that names no date is a warning for that file, and the next source is used.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import PurePosixPath
from typing import Any

from secondbrain.date_sources import DAY_NAME, FILE_NAME, FRONT_MATTER, HEADING, ISO_START, MODIFIED, heading_date

# Front matter keys in the order they are read: a note's own date, then when it was made, then last changed.
FRONT_MATTER_KEYS = ("date", "created", "updated", "modified")

_COMPACT_DAY_NAME = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
_WEEK_NAME = re.compile(r"^(\d{4})-W(\d{1,2})$", re.IGNORECASE)
_MONTH_NAME = re.compile(r"^(\d{4})-(\d{2})$")
_QUARTER_NAME = re.compile(r"^(\d{4})-Q([1-4])$", re.IGNORECASE)


@dataclass(frozen=True)
class DateSpan:
    """The days a note or passage is from, both inclusive, and where that was read."""

    start: date
    end: date
    source: str


def note_date(path: str, frontmatter: Mapping[str, Any], mtime: datetime, warnings: list[str]) -> DateSpan:
    """The note's date (see the module's docstring); a front matter value that names no date adds to `warnings`."""
    named = file_name_date(path)
    if named is not None:
        return named
    for key in FRONT_MATTER_KEYS:
        value = next((v for k, v in frontmatter.items() if isinstance(k, str) and k.lower() == key), None)
        if value is None or value == "":
            continue
        day = _front_matter_day(value)
        if day is None:
            warnings.append(
                f"front matter {key}: {str(value)[:40]!r} is not a date (write it as YYYY-MM-DD); the note is dated "
                "by the next source"
            )
            continue
        return DateSpan(day, day, f"{FRONT_MATTER} {key}")
    day = modified_day(mtime)
    return DateSpan(day, day, MODIFIED)


def modified_day(mtime: datetime) -> date:
    """The day a file's modification time dates it: its day in UTC (the server's zone is nobody's in particular)."""
    return mtime.astimezone(UTC).date()


def file_name_date(path: str) -> DateSpan | None:
    """The span of days a daily or periodic note's file name names, or None."""
    stem = PurePosixPath(path).stem.strip()
    try:
        if match := DAY_NAME.match(stem) or _COMPACT_DAY_NAME.match(stem):
            day = date(int(match[1]), int(match[2]), int(match[3]))
            return DateSpan(day, day, FILE_NAME)
        if match := _WEEK_NAME.match(stem):
            monday = date.fromisocalendar(int(match[1]), int(match[2]), 1)
            return DateSpan(monday, monday + timedelta(days=6), FILE_NAME)
        if match := _MONTH_NAME.match(stem):
            year, month = int(match[1]), int(match[2])
            first = date(year, month, 1)
            return DateSpan(first, date(year, month, calendar.monthrange(year, month)[1]), FILE_NAME)
        if match := _QUARTER_NAME.match(stem):
            year, quarter = int(match[1]), int(match[2])
            first = date(year, 3 * quarter - 2, 1)
            last_month = 3 * quarter
            return DateSpan(first, date(year, last_month, calendar.monthrange(year, last_month)[1]), FILE_NAME)
    except ValueError:  # 2026-13-45, week 60: digits in a name, not a date
        return None
    return None


def passage_date(heading_path: Sequence[str], note: DateSpan) -> DateSpan:
    """A passage's date: its innermost dated heading's day, else its note's date."""
    for heading in reversed(heading_path):
        day = heading_date(heading)
        if day is not None:
            return DateSpan(day, day, HEADING)
    return note


def _front_matter_day(value: object) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str) and (match := ISO_START.match(value)):
        try:
            return date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            return None
    return None
