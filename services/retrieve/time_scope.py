"""A question's time applied to retrieval: "last week" keeps the search to the notes and passages dated then, and
"latest" puts the newest of the relevant first.

A range becomes a date filter with a soft edge: the search also reaches a margin of days around the range (a diary
written up the day after, a week that is "last week" to one person and the week before to another), and a passage
dated in the margin ranks at SOFT_EDGE_SHARE of its score, behind one dated in the range. The words that only named
the time are not searched as content. A passage dated only by its file's modification time is not taken as dated
then, whatever that time: it ranks after every passage the notes date in the range or its margin. Passages no note
dates are searched only when nothing the notes date in or near the range matches: then every note is, and the plan
says so. (Searching them beside the dated, behind them, found a little more on vaults with undated logs, but the
quoting provider then quoted a README or a recipe for "what did I do yesterday?".) An explicit date filter
(`filters.date_from` / `date_to`) wins over the words of the question.

A time named by events ("after the roofer's inspection") becomes a range once the pipeline has found each event's
day in the notes (`at_events`); that range is the notes' own days, so it has no margin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

from secondbrain.date_sources import day_words
from secondbrain.retrieve import time_offsets
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.fusion import Fused
from secondbrain.retrieve.question_time import TimeIntent, read_time
from secondbrain.retrieve.time_range import TimeRange

# A passage dated within the margin, outside the asked range, keeps this share of its score.
SOFT_EDGE_SHARE = 0.5
# The margin: half the range's length, at least a day and at most a week.
MIN_MARGIN_DAYS, MAX_MARGIN_DAYS = 1, 7
# "Latest" orders by date the passages scoring at least this share of the best one: the relevant, newest first.
LATEST_SHARE = 0.5


@dataclass(frozen=True)
class TimeScope:
    intent: TimeIntent
    filters: Filters
    """The request's filters with the range and its margin: what the search runs with."""
    found_events: str = ""
    """Where the question's events were found in the notes ("after the roofer's inspection, 1 July 2026")."""

    def describe(self) -> str:
        parts = []
        if self.intent.range is not None:
            parts.append(self.intent.range.describe() + (f" ({self.found_events})" if self.found_events else ""))
        if self.intent.latest:
            parts.append("latest first")
        text = "; ".join(parts)
        return text[:1].upper() + text[1:]


def scope(question: str, now: datetime, filters: Filters, earlier: Sequence[str] = ()) -> TimeScope | None:
    """What `question` says of time, as retrieval applies it; None when it says nothing, or when the request's own
    date filter already decides. `earlier`: the conversation's messages before it, oldest first, whose latest named
    day an offset ("and the day after?") is from."""
    if filters.date_from or filters.date_to:
        return None
    try:
        anchor = time_offsets.anchor_day(earlier, now.date()) if time_offsets.names_offset(question) else None
        intent = read_time(question, now, anchor)
        if intent.range is None and not intent.latest and intent.event is None:
            return None
        return _applied(intent, now, filters)
    except OverflowError:
        # A day at the calendar's edge ("before 1 January 0001", a margin past 9999): no range can be made of it,
        # so the question is searched as asked (found by a probe: it was an INTERNAL error on every door).
        return None


def at_events(
    time: TimeScope, days: tuple[date | None, date | None], now: datetime, filters: Filters
) -> TimeScope | None:
    """`time` with its events' `days` as found in the notes (None: not found). An event's day is the notes' own, not
    a person's loose "last week": the range has no margin (a margin would also find a wrongly dated event's
    neighbours where an empty range falls back to every note). None when no event was found (and nothing else was
    asked of time): the question is then searched as asked, its words about the event included."""
    event = time.intent.event
    try:
        asked = event.range_from(*days, now.date()) if event is not None else None
        intent = replace(time.intent, range=asked, event=None)
        if event is None or asked is None:
            return _applied(intent, now, filters) if intent.latest else None
        applied = _applied(intent, now, filters, margin=False)
    except OverflowError:  # as in `scope`: an event dated at the calendar's edge makes no range
        return None
    found = [f"{what}, {day_words(day)}" for what, day in zip((event.what, event.second), days, strict=True) if day]
    return replace(applied, found_events="; ".join(found))


def _applied(intent: TimeIntent, now: datetime, filters: Filters, margin: bool = True) -> TimeScope:
    widened = filters
    if intent.range is not None:
        start, end = _widened(intent.range) if margin else (intent.range.start, intent.range.end)
        widened = replace(filters, date_from=start, date_to=end)
    elif intent.latest:
        # The newest as of the asker's now: a note dated later (a plan for next month) is not what they last wrote.
        widened = replace(filters, date_to=now.date())
    return TimeScope(intent, widened)


def _widened(asked: TimeRange) -> tuple[date | None, date | None]:
    days = (asked.end - asked.start).days + 1 if asked.start and asked.end else MAX_MARGIN_DAYS * 2
    margin = timedelta(days=max(MIN_MARGIN_DAYS, min(MAX_MARGIN_DAYS, days // 2)))
    return (asked.start - margin if asked.start else None, asked.end + margin if asked.end else None)


def reorder(
    fused: list[Fused],
    dates: dict[int, tuple[date, date]],
    time: TimeScope,
    content_dated: frozenset[int] = frozenset(),
) -> list[Fused]:
    """`fused` (best first) with the soft edge applied and, for "latest", the relevant ordered newest first: those
    the notes themselves date (`content_dated`, chunk ids) by that date, then the rest in the search's order (a
    file's modification time says when it was last edited, not what is newest: a reference note fixed for a typo
    yesterday is no news). `dates` are the chunks' (first day, last day) by chunk id. A chunk no note dates (dated
    only by its file's modification time) comes after every chunk dated in the range or its margin."""
    asked = time.intent.range
    if asked is not None:
        edged = [
            item
            if item.candidate.chunk_id in content_dated and _within(dates.get(item.candidate.chunk_id), asked)
            else Fused(item.candidate, item.score * SOFT_EDGE_SHARE)
            for item in fused
        ]
        # A passage no note dates comes after every passage dated then or near: it may be from then, or not.
        fused = sorted(edged, key=lambda item: (item.candidate.chunk_id not in content_dated, -item.score))
    if time.intent.latest and fused:
        floor = LATEST_SHARE * fused[0].score
        relevant = [item for item in fused if item.score >= floor]
        rest = [item for item in fused if item.score < floor]

        def newness(item: Fused) -> date:
            chunk = item.candidate.chunk_id
            return dates.get(chunk, (date.min, date.min))[1] if chunk in content_dated else date.min

        fused = sorted(relevant, key=newness, reverse=True) + rest
    return fused


def _within(span: tuple[date, date] | None, asked: TimeRange) -> bool:
    if span is None:
        return False
    first, last = span
    return (asked.start is None or last >= asked.start) and (asked.end is None or first <= asked.end)
