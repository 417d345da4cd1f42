"""A time a follow-up names as an offset from a day the conversation named before it: after "When was the Fernhill
kickoff?" and its answer "Tuesday 10 February 2026", "and the day after?" asks about 11 February, "two days later"
about the 12th, "the following week" about 11-17 February, "the Wednesday after" about the 11th.

Only an offset with nothing after it to be from ("the day after," or "two days later"): "the day after the move"
names an event, which `time_events` finds in the notes. The day it is from is the first day the latest message
naming one names: the answer, else the question before it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, timedelta

from secondbrain.date_sources import days_named_in_order, number_value, read_as_of_latest
from secondbrain.retrieve.time_phrases import AMOUNTS, WEEKDAY_NUMBERS, Days

_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_COUNT = r"(?P<count>\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a couple|a few|several)"
# What ends an offset that is from the day before it: the end of a clause, or words that say "then".
_FROM_THEN = r"(?=\s*(?:$|[,.?!;:]|\s(?:that|then|this|it|when|what|did|was|were|how|and|i|we)\b))"
_OFFSET = re.compile(
    rf"\b(?:the\s+)?(?P<unit>day|morning|evening|night|week|weekend)\s+(?P<side>after|before){_FROM_THEN}"
    rf"|\b(?:the\s+)?(?P<side2>next|following|previous)\s+(?P<unit2>day|morning|evening|week|weekend)\b"
    rf"|\b{_COUNT}\s+(?P<unit3>days?|weeks?)\s+(?P<side3>later|after|before|earlier|on){_FROM_THEN}"
    rf"|\bthe\s+(?P<weekday>{_WEEKDAYS})\s+(?P<side4>after|before){_FROM_THEN}",
    re.IGNORECASE,
)
# A conversation's earlier day is looked for in at most this many of its latest messages.
LOOK_BACK = 4


def names_offset(question: str) -> bool:
    """Whether `question` names a time as an offset from an earlier day (cheap: read before the history is)."""
    return _OFFSET.search(question) is not None


def anchor_day(earlier: Sequence[str], today: date) -> date | None:
    """The day a follow-up's offset is from: the first day named by the latest of `earlier` (oldest first) that
    names one, read as of `today`."""
    written = read_as_of_latest(today)  # a day named without its year: the latest such day up to today
    for message in reversed(earlier[-LOOK_BACK:]):
        days = [day for day in days_named_in_order(message, written) if day <= today]
        if days:
            return days[0]
    return None


def offset(question: str, anchor: date) -> Days | None:
    """The days the offset `question` names from `anchor`, with the words that named it; None without one."""
    match = _OFFSET.search(question)
    if match is None:
        return None
    words = match.group(0).strip()
    if weekday := match["weekday"]:
        number = WEEKDAY_NUMBERS[weekday.lower()]
        if match["side4"].lower() == "after":
            day = anchor + timedelta(days=(number - anchor.weekday()) % 7 or 7)
        else:
            day = anchor - timedelta(days=(anchor.weekday() - number) % 7 or 7)
        return (day, day, words)
    if count := match["count"]:
        later = match["side3"].lower() in ("later", "after", "on")
        unit = 7 if match["unit3"].lower().startswith("week") else 1
        fewest, most = AMOUNTS[count.lower()] if count.lower() in AMOUNTS else (number_value(count),) * 2
        near, far = fewest * unit, most * unit
        if unit == 7:  # "three weeks later" is about then, give or take a few days
            near, far = near - 3, far + 3
        first, last = (anchor + timedelta(days=near), anchor + timedelta(days=far)) if later else (
            anchor - timedelta(days=far), anchor - timedelta(days=near))  # fmt: skip
        return (first, last, words)
    unit = (match["unit"] or match["unit2"]).lower()
    side = (match["side"] or match["side2"]).lower()
    after = side in ("after", "next", "following")
    if unit == "week":
        return (anchor + timedelta(days=1), anchor + timedelta(days=7), words) if after else (
            anchor - timedelta(days=7), anchor - timedelta(days=1), words)  # fmt: skip
    if unit == "weekend":
        saturday = anchor + timedelta(days=(5 - anchor.weekday()) % 7 or 7) if after else (
            anchor - timedelta(days=(anchor.weekday() - 5) % 7 or 7))  # fmt: skip
        return (saturday, saturday + timedelta(days=1), words)
    day = anchor + timedelta(days=1 if after else -1)
    return (day, day, words)
