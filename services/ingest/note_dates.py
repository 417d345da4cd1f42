"""When a note, and each passage of it, is from: read from the note itself, as a person reading the vault would.

People write dates their own way, so each place below reads a day in figures year first (`2026-01-20`,
`2026.01.20`, `2026/01/20`) or day first (`20.01.2026`, `20/01/2026`, `20/01/26`), and in words (`20 January 2026`,
`Monday, January 20, 2026`; see `secondbrain.date_sources.heading_date`).

A note's date comes from the first of these that says one:
1. its file name, as Obsidian's daily notes and the Periodic Notes plugin name them, in any of those figures: a day
   (`2026-01-20`, also with words after it, `2026-01-20 Standup` or `14-03-2026 Saturday`; or `20260120`), a week
   (`2026-W04`), a month (`2026-01`, `2026-03 March review`), a quarter (`2026-Q1`), or a year ending it
   (`Runs 2025`, `Christmas 2025`, `Tax return 2024-25`): a span of days;
2. its front matter: `date`, then `created`, then `updated` or `modified`, as Obsidian's properties and common
   templates write them (a YAML date, or text starting with a day: `2026-01-20T09:15`, `14.03.2026`, `10/02/2026`);
3. its title or first line, when it starts with a day: a diary's "Thursday 16th April", a meeting's "10/02/2026";
   without its year, the year whose day has the weekday written, else the last such day up to the file's
   modification time;
4. the file's modification time, the last resort (its day in UTC).

A passage under a dated heading (`## 2026-01-20`, `## 20 January 2026`, `## Monday, January 20, 2026`: a running
log) is from that heading's day, the innermost dated heading winning. A heading without its year (`### Tue 10 Feb`,
`## 12 March`) takes it from a heading above that names one (`# 2026`, `## March 2026`), else from the note's days
(a weekly note's `Tue 10 Feb` is of that week's year). A heading naming a month of a year (`## March 2026`) dates
what is under it to that month. A passage under no dated heading, in a note not dated to one day, is from the days
its lines start with (an undated log's table rows, a weekly note's `- Tue 20 Jan:` items). Any other passage is
from its note's date.
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

from secondbrain.date_sources import (
    FILE_NAME,
    FIRST_LINE,
    FRONT_MATTER,
    HEADING,
    LINES,
    MODIFIED,
    MONTH_NAMES,
    MONTHS,
    heading_date,
    heading_year,
)

# Front matter keys in the order they are read: a note's own date, then when it was made, then last changed.
FRONT_MATTER_KEYS = ("date", "created", "updated", "modified")

_COMPACT_DAY_NAME = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
_WEEK_NAME = re.compile(r"^(\d{4})-W(\d{1,2})$", re.IGNORECASE)
_MONTH_NAME = re.compile(r"^(\d{4})[-.](\d{2})(?:$|\s+(?!\d))")
_QUARTER_NAME = re.compile(r"^(\d{4})-Q([1-4])$", re.IGNORECASE)
# A file name ending in a year, after words ("Runs 2025", "Christmas 2025", "Tax return 2024-25"): a note of that year
# (or two). Not a name that is only a number ("1984") or starts with one ("2001 A Space Odyssey").
_YEAR_ENDING_NAME = re.compile(r"^(?=.*[^\W\d_]).*?[\s_(]((?:19|20)\d{2})(?:[-\u2013]((?:19|20)?\d{2}))?\)?$")
# A heading that is a month of a year: "March 2026", "2026-03".
_MONTH_HEADING = re.compile(
    rf"^(?:(?P<name>{MONTH_NAMES})\.?\s+(?P<year>\d{{4}})|(?P<y>\d{{4}})-(?P<m>\d{{2}}))\s*$", re.IGNORECASE
)
# A note's first line is read for a day only this far in: a diary's opening, not a paragraph's middle.
_FIRST_LINE_CHARS = 80
# What comes before a line's own words: a table's pipe, a list's mark, a quote's, emphasis.
_LINE_START = re.compile(r"^[\s|>*_+-]*(?:\[[ xX]\]\s*)?")


@dataclass(frozen=True)
class DateSpan:
    """The days a note or passage is from, both inclusive, and where that was read."""

    start: date
    end: date
    source: str


def note_date(
    path: str, frontmatter: Mapping[str, Any], mtime: datetime, warnings: list[str], body: str = ""
) -> DateSpan:
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
    modified = modified_day(mtime)
    if (day := first_line_date(body, modified)) is not None:
        return DateSpan(day, day, FIRST_LINE)
    return DateSpan(modified, modified, MODIFIED)


def first_line_date(body: str, modified: date) -> date | None:
    """The day a note's title or first line (the first after a title) starts with, marks and emphasis aside; without
    its year, the one with the weekday written, else the last up to `modified` (a diary is written on or after its
    day)."""
    lines = [line.strip() for line in body.splitlines() if line.strip()][:2]
    opening = lines[:2] if lines and lines[0].startswith("#") else lines[:1]
    for line in opening:
        text = line.lstrip("#").strip().strip("*_").strip()[:_FIRST_LINE_CHARS]
        day = heading_date(text)
        if day is None and (day := heading_date(text, near=modified)) is not None and day > modified:
            # No weekday said which year: the last such day up to the file's last change.
            earlier = heading_date(text, near=date(modified.year - 1, modified.month, min(modified.day, 28)))
            day = earlier if earlier is not None and earlier <= modified else None
        if day is not None:
            return day
    return None


def modified_day(mtime: datetime) -> date:
    """The day a file's modification time dates it: its day in UTC (the server's zone is nobody's in particular)."""
    return mtime.astimezone(UTC).date()


def file_name_date(path: str) -> DateSpan | None:
    """The span of days a daily or periodic note's file name names, or None."""
    stem = PurePosixPath(path).stem.strip()
    try:
        if match := _COMPACT_DAY_NAME.match(stem):
            day = date(int(match[1]), int(match[2]), int(match[3]))
            return DateSpan(day, day, FILE_NAME)
        if (day := heading_date(stem)) is not None and stem[:1].isdigit():
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
        if match := _YEAR_ENDING_NAME.match(stem):
            first_year, last = int(match[1]), match[2] or ""
            last_year = (first_year // 100 * 100 + int(last) if len(last) == 2 else int(last)) if last else first_year
            if first_year <= last_year <= first_year + 1:
                return DateSpan(date(first_year, 1, 1), date(last_year, 12, 31), FILE_NAME)
    except ValueError:  # 2026-13-45, week 60: digits in a name, not a date
        return None
    return None


def passage_date(heading_path: Sequence[str], note: DateSpan, text: str = "") -> DateSpan:
    """A passage's date: its innermost dated heading's day (or month), else the days its lines start with (see
    `lines_date`), else its note's date. A day without its year takes the year of the nearest heading above naming
    one, else the one nearest the note's days."""
    near = note.start + (note.end - note.start) / 2
    for level in range(len(heading_path) - 1, -1, -1):
        heading = heading_path[level]
        year = next((y for above in reversed(heading_path[:level]) if (y := heading_year(above))), None)
        day = heading_date(heading, near=near, year=year)
        if day is not None:
            return DateSpan(day, day, HEADING)
        if (month := _month_heading(heading, year)) is not None:
            return month
    year = next((y for heading in reversed(heading_path) if (y := heading_year(heading))), None)
    return lines_date(text, note, near, year) or note


def lines_date(text: str, note: DateSpan, near: date, year: int | None) -> DateSpan | None:
    """The first to the last day a passage's lines start with (a table's rows `| Sat 14 Mar | 10k |`, a list's items
    `- Tue 20 Jan: ...`, `Mon: ...`), for a passage its note does not date to one day: an undated log's rows date it,
    and a week's note is narrowed to the days its passage tells of. Days outside a dated note's span are plans or
    memories, not what the passage is from: then the note's date stands."""
    if note.source != MODIFIED and note.start == note.end:
        return None
    days = []
    for line in text.splitlines():
        start = _LINE_START.sub("", line)[:_FIRST_LINE_CHARS]
        if start[:1].isalnum() and (day := heading_date(start, near=near, year=year)) is not None:
            days.append(day)
    if not days:
        return None
    if note.source != MODIFIED and not all(note.start <= day <= note.end for day in days):
        return None
    return DateSpan(min(days), max(days), LINES)


def _month_heading(heading: str, year: int | None) -> DateSpan | None:
    """The days of a heading that is a month of a year ("March 2026", "2026-03"); "March" alone under a year's."""
    text = heading.strip()
    if match := _MONTH_HEADING.match(text):
        if match["name"]:
            year_of, month = int(match["year"]), MONTHS[match["name"].lower()]
        else:
            year_of, month = int(match["y"]), int(match["m"])
    elif year is not None and text.lower().rstrip(".") in MONTHS:
        year_of, month = year, MONTHS[text.lower().rstrip(".")]
    else:
        return None
    if not 1 <= month <= 12:
        return None
    first = date(year_of, month, 1)
    return DateSpan(first, date(year_of, month, calendar.monthrange(year_of, month)[1]), HEADING)


def _front_matter_day(value: object) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        return heading_date(value)
    return None
