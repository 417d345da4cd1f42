"""Where a note's or passage's date was read (ingest writes these with each date; a passage's reader shows them),
and how dates are written out."""

from __future__ import annotations

import calendar
import contextlib
import re
from datetime import date, timedelta

FILE_NAME = "file name"
HEADING = "heading"
# The file's modification time: the last resort, and a weak date (an evergreen note edited yesterday is not news).
MODIFIED = "modification time"
FRONT_MATTER = "front matter"
# A day a note's title or first line starts with: a diary's "Thursday 16th April".
FIRST_LINE = "first line"
# The days a passage's lines start with: an undated log's table rows, a weekly note's "- Tue 20 Jan:" items.
LINES = "lines"

# A day written at the start of a file name or a value: `2026-01-20`, `2026-01-20 Standup`, `2026-01-20T09:00`.
DAY_NAME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?!\d)")
ISO_START = re.compile(r"^\s*(\d{4})-(\d{2})-(\d{2})(?:$|[T\s])")
# Each month's English name and abbreviation, lowercased, to its number: one place for what a month is called.
MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name} | {
    name.lower(): number for number, name in enumerate(calendar.month_abbr) if name
}
# The names, longest first, as a regular expression's alternatives ("september|sept|sep|...").
MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
_MONTH = f"({MONTH_NAMES})" + r"\.?"
_WEEKDAY = r"(?:[A-Za-z]+,?\s+)?"
# A year of two figures only where nothing follows it in the line's cell: "3 Feb 26 | 134/85", not "12 March 20 km".
_HEADING_DAY_MONTH = re.compile(
    rf"^{_WEEKDAY}(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH}\s+(\d{{4}}\b|'?\d{{2}}(?=\s*(?:$|[|,;)\]])))", re.IGNORECASE
)
_HEADING_MONTH_DAY = re.compile(rf"^{_WEEKDAY}{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
# A day named in prose: "8 November", "the 8th of November 2026", "November 8th, 2026", "2026-11-08".
_PROSE_DAY_MONTH = re.compile(
    rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s*(?:to|until|-|\u2013)\s*)?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}"
    r"(?:,?\s+(\d{4}))?\b",
    re.IGNORECASE,
)
_PROSE_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?", re.IGNORECASE)
_PROSE_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
# A countdown names a day by its distance from the note's: "Eighteen days to Porto", "two weeks until the move", "a
# week to go". Only a countdown to a thing (a name, "the", "my"): "five days to heal" and "finished in ten days" are
# durations, and "three days before the race" may be told after it.
_UNITS = [
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen",
    "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
]  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60}
_NUMBER_WORDS = {word: n for n, word in enumerate(_UNITS, 1)} | _TENS | {
    f"{tens}{joint}{unit}": value + n for tens, value in _TENS.items() for n, unit in enumerate(_UNITS[:9], 1)
    for joint in ("-", " ")
}  # fmt: skip
_COUNT = "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
_COUNTDOWN = re.compile(
    r"(?<![\d.,])(?<!\btook\s)(?<!\btakes\s)(?<!\bspent\s)"
    rf"\b(?P<count>\d{{1,3}}|(?i:a|{_COUNT}))\s+(?P<unit>(?i:days?|weeks?))\s+"
    r"(?:(?i:to go)\b|(?i:to|until|till)\s+(?!(?i:the\s+day)\b)(?:(?i:the|my|our)\b|[A-Z]))"
)
# A day named without its year is the first such day no more than this long before the note that names it: a note
# says when something is to be ("the race is on 8 November", written in March), or tells of recent weeks.
_RECENT_DAYS = 31


def said(date: str, source: str) -> str:
    """How a passage's date reads beside it, for a model and a person: "dated 2026-01-20", "dated 2026-01-19 to
    2026-01-25"; "" when undated, or dated only by the file's modification time (a note edited yesterday for a typo
    is not yesterday's decision, and a model told so would take it for the newer one)."""
    if not date or source == MODIFIED:
        return ""
    return f"dated {date.replace('..', ' to ')}"


def span_text(start: date | None, end: date | None) -> str:
    """Days as the API writes them: "2026-01-20", or "2026-01-19..2026-01-25" for a span; "" when not dated."""
    if start is None or end is None:
        return ""
    return start.isoformat() if start == end else f"{start.isoformat()}..{end.isoformat()}"


def number_value(count: str) -> int:
    """A count as a person writes it, in digits or words ("18", "eighteen", "twenty-one"), as a number."""
    return int(count) if count.isdigit() else _NUMBER_WORDS[count.lower()]


def day_words(day: date, year: bool = True) -> str:
    """A day as a person reads it, in the plan and in an answer: "3 February 2026" ("3 February" without the year)."""
    return f"{day.day} {calendar.month_name[day.month]}" + (f" {day.year}" if year else "")


# Days written in figures at the start of a text, as people in different places write them: year first (2026-01-20,
# 2026.01.20, 2026/01/20, 2026_01_20), or day first as most of the world does (20.01.2026, 20/01/2026, 20-01-26);
# month first (01/20/2026) only where the figures allow nothing else (a "day" over 12 second). A year of two figures
# only with slashes (20/01/26): "1.4.16" is a version.
_YEAR_FIRST = re.compile(r"^(\d{4})([-./_])(\d{1,2})\2(\d{1,2})(?![\d])")
_DAY_FIRST = re.compile(r"^(\d{1,2})([-./])(\d{1,2})\2(\d{4}|(?<=/\d/)\d{2}|(?<=/\d\d/)\d{2})(?![\d]|[-./]\d)")
# A day without its year, after an optional weekday, as a log's headings write it: "Tue 10 Feb", "12 March",
# "Thursday 16th April", "March 12th". Only a weekday may come before it (any word may, before a day with a year).
_WEEKDAY_NAME = r"(?:(?P<weekday>mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s+)?"
_YEARLESS_DAY_MONTH = re.compile(
    rf"^{_WEEKDAY_NAME}(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>{MONTH_NAMES})\b\.?(?!\s*\d)",
    re.IGNORECASE,
)
_YEARLESS_MONTH_DAY = re.compile(
    rf"^{_WEEKDAY_NAME}(?P<month>{MONTH_NAMES})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\b(?!,?\s*\d)", re.IGNORECASE
)
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# A heading that names a year ("2026", "2026: the allotment") or a month of one ("March 2026"): the year of the days
# under it that do not say theirs.
_YEAR_HEADING = re.compile(r"^(?:(?:" + MONTH_NAMES + r")\.?\s+)?(\d{4})(?![\d./-])", re.IGNORECASE)
# How far from the day it is read near a day without its year may fall: a log's entries are near the note's days.
_YEARS_AROUND = (-1, 0, 1)


def _figures_day(text: str) -> date | None:
    if match := _YEAR_FIRST.match(text):
        return date(int(match[1]), int(match[3]), int(match[4]))
    if match := _DAY_FIRST.match(text):
        first, second, year = int(match[1]), int(match[3]), int(match[4])
        year += 2000 if len(match[4]) == 2 else 0
        day, month = (second, first) if second > 12 >= first else (first, second)
        return date(year, month, day)
    return None


def heading_date(heading: str, near: date | None = None, year: int | None = None) -> date | None:
    """The day a heading (or a value, a line) names at its start, or None: with its year (`2026-01-20`, `20.01.2026`,
    `20 January 2026`, `Monday, January 20, 2026`), or without it (`Tue 10 Feb`, `12 March`) when the year is known
    (`year`, from a heading above) or can be told from a day `near` it: the year within one of it whose day has the
    weekday written, else the nearest."""
    text = heading.strip()
    try:
        if match := ISO_START.match(text) or DAY_NAME.match(text):
            return date(int(match[1]), int(match[2]), int(match[3]))
        if figures := _figures_day(text):
            return figures
        if match := _HEADING_DAY_MONTH.match(text):
            year = int(match[3].lstrip("'"))
            return date(year + 2000 if year < 100 else year, MONTHS[match[2].lower()], int(match[1]))
        if match := _HEADING_MONTH_DAY.match(text):
            return date(int(match[3]), MONTHS[match[1].lower()], int(match[2]))
    except ValueError:
        return None
    if near is None and year is None:
        return None
    match = _YEARLESS_DAY_MONTH.match(text) or _YEARLESS_MONTH_DAY.match(text)
    if match is None:
        return None
    return _yearless(MONTHS[match["month"].lower()], int(match["day"]), match["weekday"], near, year)


def starts_with_day(text: str) -> bool:
    """Whether `text` starts with a day, with its year or without (`Tue 10 Feb`), as a dated heading does."""
    text = text.strip()
    return heading_date(text) is not None or bool(_YEARLESS_DAY_MONTH.match(text) or _YEARLESS_MONTH_DAY.match(text))


def _yearless(month: int, day: int, weekday: str | None, near: date | None, year: int | None) -> date | None:
    years = [year] if year is not None else [near.year + step for near in [near] if near for step in _YEARS_AROUND]
    candidates = []
    for candidate in years:
        with contextlib.suppress(ValueError):
            candidates.append(date(candidate, month, day))
    if weekday and len(candidates) > 1:
        candidates = [c for c in candidates if _WEEKDAYS[c.weekday()] == weekday.lower()[:3]] or candidates
    if not candidates:
        return None
    return min(candidates, key=lambda c: abs((c - near).days)) if near is not None else candidates[0]


def heading_year(heading: str) -> int | None:
    """The year a heading names at its start ("2026", "2026 - allotment", "March 2026"), for the days under it."""
    match = _YEAR_HEADING.match(heading.strip())
    return int(match[1]) if match and 1000 <= int(match[1]) <= 9999 else None


def days_named(text: str, written: date) -> set[date]:
    """The days `text` names in prose ("8 November", "November 8th, 2026", "2026-11-08", "eighteen days to Porto"); a
    day without its year is the first such day on or after a month before `written`, the day of the note that names
    it. A month is a month only when capitalised, as prose writes it: "you may 2" names no day."""
    return set(days_named_in_order(text, written))


def days_named_in_order(text: str, written: date) -> list[date]:
    """`days_named`, in the order `text` names them (each once)."""
    named: list[tuple[int, date | None]] = []
    for match in _PROSE_DAY_MONTH.finditer(text):  # "8 November", or both ends of "14 to 21 May"
        if match[3][0].isupper():
            month = MONTHS[match[3].lower()]
            named.extend(
                (match.start(), _day_in_year(match[4], month, int(day), written)) for day in (match[1], match[2]) if day
            )
    for match in _PROSE_MONTH_DAY.finditer(text):
        if match[1][0].isupper():
            named.append((match.start(), _day_in_year(match[3], MONTHS[match[1].lower()], int(match[2]), written)))
    for match in _PROSE_ISO.finditer(text):
        named.append((match.start(), _day_in_year(match[1], int(match[2]), int(match[3]), written)))
    for match in _COUNTDOWN.finditer(text):
        count = match["count"].lower()
        number = 1 if count == "a" else number_value(count)
        with contextlib.suppress(OverflowError):  # a note dated at the end of the calendar
            unit = 7 if match["unit"].lower().startswith("week") else 1
            named.append((match.start(), written + timedelta(days=number * unit)))
    ordered = [day for _, day in sorted(named, key=lambda found: found[0]) if day is not None]
    return list(dict.fromkeys(ordered))


def read_as_of_latest(until: date) -> date:
    """The day to give `days_named` so that a day named without its year is read as the latest such day up to
    `until` (an answer, or a report, tells of what has happened), not the first from a month before it."""
    return until - timedelta(days=365 - _RECENT_DAYS)


def _day_in_year(year: str | None, month: int, day: int, written: date) -> date | None:
    try:
        if year:
            return date(int(year), month, day)
        earliest = written - timedelta(days=_RECENT_DAYS)
        named = date(earliest.year, month, day)
        return named if named >= earliest else date(earliest.year + 1, month, day)
    except (ValueError, OverflowError):  # no such day, or a note dated at either end of the calendar
        return None
