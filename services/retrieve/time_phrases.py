"""Ways people name a time that dateparser does not read, found on the blind dev sets' questions ("over Easter",
"right before Christmas", "mid-March", "the 14th", "the other day", "two Saturdays ago", "a couple of weeks back",
"the second Monday of March", "the last week of January").

`normalised` rewrites a question's vague amounts into words dateparser reads ("a couple of weeks back" becomes "2
weeks ago"); `phrase` reads the rest into a range of days (first day, last day, the words that named it), as of the
asker's today, each range ending no later than today (a question about the notes asks about days already written).
"""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta
from typing import TypeAlias

from dateutil.easter import easter

from secondbrain.date_sources import MONTH_NAMES, MONTHS, number_value

Days: TypeAlias = tuple[date, date, str]
"""A range's first and last day, both inclusive, and the question's words that named it."""

_MONTH = f"(?P<month>{MONTH_NAMES})" + r"\.?"
WEEKDAY_NUMBERS = {name.lower(): number for number, name in enumerate(calendar.day_name)}

# "3 weeks back" is "3 weeks ago" to dateparser; "yesterdays race" is yesterday's.
_VAGUE = [
    (re.compile(r"\b(\d+\s+(?:days?|weeks?|months?|years?))\s+back\b", re.IGNORECASE), r"\1 ago"),
    (re.compile(r"\byesterdays\b", re.IGNORECASE), "yesterday"),
    # Not "before yesterday", an open end: the one day two days back.
    (re.compile(r"\b(?:the\s+)?day before yesterday\b", re.IGNORECASE), "2 days ago"),
]
# "a couple of weeks back", "a few days ago": a spread of days, not one (a couple: about two; a few: about three).
_VAGUE_AGO = re.compile(
    r"\b(?P<amount>a couple of|a few|a couple|several)\s+(?P<unit>days?|weeks?|months?)\s+(?:ago|back)\b",
    re.IGNORECASE,
)
AMOUNTS = {"a couple of": (1, 3), "a couple": (1, 3), "a few": (2, 5), "several": (3, 8)}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30}
# Around a day: "right before Christmas" is the week before it, "over Easter" its long weekend.
# The word before a holiday, and the space after it (a group of its own: a bare `\s*` would be tried at every space of
# a long run, in quadratic time).
_AROUND = r"(?:(?P<around>(?:right |just |the (?:days?|week) )?(?:before|after)|over|at|on|around)\s+)?"
# A holiday's name before a noun names a thing of it, not its days: "the Christmas concert", "Easter eggs"; before a
# word of time, a year, a word of the sentence's own or its end, it is the holiday.
_HOLIDAY_THEN = (
    r"(?=\s*(?:$|[^\w\s]|\d|(?:day|eve|week|weekend|break|holidays?|time|period|morning|evening|night|and|or|with|at|"
    r"in|on|to|for|i|we|did|do|was|were|is|what|how|when|where|who|this|last|that|then|so|but)\b))"
)
_HOLIDAY = re.compile(
    _AROUND + r"\b(?P<holiday>christmas(?: day| eve)?|xmas|easter(?: weekend| sunday| monday)?|halloween|"
    r"new year'?s?(?: day| eve)?|the new year)\b" + _HOLIDAY_THEN,
    re.IGNORECASE,
)
_PART_OF_MONTH = re.compile(rf"\b(?P<part>early|mid|late|the (?:start|beginning|middle|end) of)[\s-]+{_MONTH}\b",
                            re.IGNORECASE)  # fmt: skip
_PART_OF_THIS_MONTH = re.compile(r"\b(?:at )?the (?P<part>start|beginning|end) of the month\b", re.IGNORECASE)
_DAY_OF_MONTH = re.compile(r"\b(?:on )?the (?P<day>[1-9]|[12]\d|3[01])(?:st|nd|rd|th)\b(?!\s+(?:of|century))",
                           re.IGNORECASE)  # fmt: skip
_OTHER_DAY = re.compile(r"\bthe other day\b", re.IGNORECASE)
# A part of today: "this morning", "earlier today" (dateparser reads "this morning" as no day).
_TODAY = re.compile(r"\b(?:this (?:morning|afternoon|evening)|earlier today)\b", re.IGNORECASE)
_WEEKDAYS_AGO = re.compile(
    r"\b(?P<count>two|three|four|five|[2-5])\s+(?P<weekday>monday|tuesday|wednesday|thursday|friday|saturday|sunday)s"
    r"\s+ago\b",
    re.IGNORECASE,
)
# An ordinal day or week of a month: "the second Monday of March", "the last week of January 2026".
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "fifth": 5,
             "5th": 5, "last": -1}  # fmt: skip
_ORDINAL = r"(?P<ordinal>first|second|third|fourth|fifth|last|1st|2nd|3rd|4th|5th)"
_ORDINAL_OF_MONTH = re.compile(
    rf"\b(?:the\s+)?{_ORDINAL}\s+(?:(?P<weekday>monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    rf"(?P<week>week(?:end)?))\s+(?:of|in)\s+{_MONTH}(?:\s+(?P<year>\d{{4}}))?\b",
    re.IGNORECASE,
)
# The thirds of a month: early, mid, late.
_PARTS = {"early": (1, 10), "start of": (1, 10), "beginning of": (1, 10), "mid": (10, 20), "middle of": (10, 20),
          "late": (20, 31), "end of": (20, 31)}  # fmt: skip


# "this yr", "2 wks ago", "a few wks back": a year or week typed short, after a word that makes it a time.
_SHORT_FORM = re.compile(
    r"\b(this|last|next|past|previous|a|one|few|couple(?:\s+of)?|several|\d+)\s+(yr|wk)(s?)\b", re.IGNORECASE
)


def short_forms(question: str) -> str:
    """`question` with a year or week typed short ("this yr", "2 wks") written out, before anything reads it."""
    return _SHORT_FORM.sub(
        lambda short: f"{short[1]} {'year' if short[2].lower() == 'yr' else 'week'}{short[3]}", question
    )


def normalised(question: str) -> str:
    """`question` with vague amounts in words dateparser reads."""
    for pattern, replacement in _VAGUE:
        question = pattern.sub(replacement, question)
    return question


def phrase(question: str, today: date) -> Days | None:
    """The range a phrase of `question` names that dateparser does not read, or None."""
    for read in (
        _holiday,
        _ordinal_of_month,
        _part_of_month,
        _part_of_this_month,
        _weekdays_ago,
        _vague_ago,
        _other_day,
        _day_of_month,
        _part_of_today,
    ):
        found = read(question, today)
        if found is not None:
            return found
    return None


def _past(start: date, end: date, words: str, today: date) -> Days | None:
    """The range, ending no later than today; None when it has not begun (a plan's time, not its notes')."""
    if start > today:
        return None
    return (start, min(end, today), words)


def _latest_year(month: int, day: int, today: date) -> int:
    """The year of the latest `month`/`day` up to today."""
    return today.year if (month, day) <= (today.month, today.day) else today.year - 1


def _holiday(question: str, today: date) -> Days | None:
    match = _HOLIDAY.search(question)
    if match is None:
        return None
    name, around = match["holiday"].lower(), (match["around"] or "").lower()
    if name.startswith("easter"):
        year = today.year if easter(today.year) - timedelta(days=2) <= today else today.year - 1
        sunday = easter(year)
        start, end = sunday - timedelta(days=2), sunday + timedelta(days=1)  # Good Friday to Easter Monday
    elif name == "halloween":
        day = date(_latest_year(10, 31, today), 10, 31)
        start = end = day
    elif "new year" in name and "eve" in name:
        day = date(_latest_year(12, 31, today), 12, 31)
        start = end = day
    elif "new year" in name:
        year = _latest_year(1, 1, today)
        # "in the new year" is its first weeks; "New Year's Day" the day.
        start, end = date(year, 1, 1), date(year, 1, 1) if "day" in name else date(year, 1, 31)
    else:  # Christmas
        day = date(_latest_year(12, 24 if "eve" in name else 25, today), 12, 24 if "eve" in name else 25)
        start, end = (day - timedelta(days=1), day + timedelta(days=1)) if "day" not in name else (day, day)
    if "before" in around:
        start, end = start - timedelta(days=7), start - timedelta(days=1)
    elif "after" in around:
        start, end = end + timedelta(days=1), end + timedelta(days=7)
    return _past(start, end, match.group(0).strip(), today)


def _ordinal_of_month(question: str, today: date) -> Days | None:
    """ "the second Monday of March" (that day), "the first week of June" (its days 1-7; the last week, the last 7),
    "the first weekend in May" (its first Saturday and Sunday): of the latest such month up to today, or the year
    named."""
    match = _ORDINAL_OF_MONTH.search(question)
    if match is None:
        return None
    month = MONTHS[match["month"].lower()]
    year = int(match["year"]) if match["year"] else _latest_year(month, 1, today)
    if not 1 <= year <= 9999:
        return None
    ordinal, length = _ORDINALS[match["ordinal"].lower()], calendar.monthrange(year, month)[1]
    if match["week"] and match["week"].lower() == "week":
        first = 1 + 7 * (ordinal - 1) if ordinal > 0 else length - 6
        if first > length:
            return None
        return (date(year, month, first), date(year, month, min(first + 6, length)), match.group(0))
    weekday = WEEKDAY_NUMBERS[match["weekday"].lower()] if match["weekday"] else 5  # a weekend starts on Saturday
    days = [day for day in range(1, length + 1) if date(year, month, day).weekday() == weekday]
    if ordinal > len(days):
        return None
    day = date(year, month, days[ordinal - 1 if ordinal > 0 else -1])
    end = day + timedelta(days=1) if match["week"] else day
    return (day, end, match.group(0))


def _part_of_month(question: str, today: date) -> Days | None:
    match = _PART_OF_MONTH.search(question)
    if match is None:
        return None
    month = MONTHS[match["month"].lower()]
    first, last = _PARTS[match["part"].lower().removeprefix("the ")]
    year = _latest_year(month, first, today)
    last = min(last, calendar.monthrange(year, month)[1])
    return _past(date(year, month, first), date(year, month, last), match.group(0), today)


def _part_of_this_month(question: str, today: date) -> Days | None:
    match = _PART_OF_THIS_MONTH.search(question)
    if match is None:
        return None
    first, last = _PARTS[f"{match['part'].lower()} of"]
    last = min(last, calendar.monthrange(today.year, today.month)[1])
    return _past(today.replace(day=first), today.replace(day=last), match.group(0), today)


def _weekdays_ago(question: str, today: date) -> Days | None:
    match = _WEEKDAYS_AGO.search(question)
    if match is None:
        return None
    weekday = WEEKDAY_NUMBERS[match["weekday"].lower()]
    latest = today - timedelta(days=(today.weekday() - weekday) % 7 or 7)  # the last one before today
    day = latest - timedelta(weeks=number_value(match["count"]) - 1)
    return (day, day, match.group(0))


def _vague_ago(question: str, today: date) -> Days | None:
    match = _VAGUE_AGO.search(question)
    if match is None:
        return None
    fewest, most = AMOUNTS[match["amount"].lower()]
    unit = _UNIT_DAYS[match["unit"].lower().rstrip("s")]
    return (today - timedelta(days=most * unit), today - timedelta(days=fewest * unit), match.group(0))


def _other_day(question: str, today: date) -> Days | None:
    match = _OTHER_DAY.search(question)
    if match is None:
        return None
    return (today - timedelta(days=7), today - timedelta(days=1), match.group(0))


def _day_of_month(question: str, today: date) -> Days | None:
    """ "on the 14th": the latest 14th up to today."""
    match = _DAY_OF_MONTH.search(question)
    if match is None:
        return None
    number, month, year = int(match["day"]), today.month, today.year
    while True:
        if number <= calendar.monthrange(year, month)[1] and date(year, month, number) <= today:
            day = date(year, month, number)
            return (day, day, match.group(0).strip())
        month, year = (12, year - 1) if month == 1 else (month - 1, year)


def _part_of_today(question: str, today: date) -> Days | None:
    match = _TODAY.search(question)
    return None if match is None else (today, today, match.group(0))
