"""The time a question names, read relative to the asker's "now": "last week", "in March", "two months ago",
"yesterday", "between 1 and 15 May", "since 3 February", "this spring", "my latest note on ...".

The parsing of one date expression is dateparser's (maintained; it finds the expression in the text and says its
granularity: a day, a week, a month, a year). Compared before choosing, on the phrases above with "now" 30 November
2026: parsedatetime reads "in March" as March 2027 (it prefers the future) and gives no granularity; ctparse
(archived in 2021) reads "last week" as today and "last month" as 7 December. What neither does is kept here: turning
a granularity into a span of days, ranges ("between ... and ...", "from ... to ..."), open ends ("since", "before",
"after", "until"), seasons, "the week before last", "latest", and refusing what only looks like a date ("a second",
"a 2nd monitor", "May" as a name, "What do I sow in April?" asking about every April). Phrases dateparser does not
read (holidays, "mid-March", "a couple of weeks back") are `time_phrases`'; a time named by events ("after the
roofer's inspection") is `time_events`', found in the notes by retrieval; an offset from a day the conversation named
("and the day after?") is `time_offsets`'.

The words that only named the time are taken out of the text to search ("What did I decide about the garden last
week?" is searched as "What did I decide about the garden?"), so "week" is not matched as content.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

from dateparser.date import DateDataParser
from dateparser.search import search_dates

from secondbrain.date_sources import MONTH_NAMES
from secondbrain.retrieve import time_offsets, time_phrases
from secondbrain.retrieve.time_events import TimeEvent, find_event
from secondbrain.retrieve.time_range import TimeRange

_MONTH = f"(?:{MONTH_NAMES})" + r"\.?"
_WEEKDAYS = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
# An expression names a day or longer only with a calendar word in it (a month or weekday, "yesterday", a date
# written in digits), or a unit of days or longer with a word that makes it a time ("two weeks ago", "last month"):
# "a second", "a 2nd monitor", "at 5pm" and "bake it for 2 days" name no time, nor "today's date" in a how-to.
_CALENDAR_WORD = re.compile(
    rf"\b(?:{_MONTH}|{_WEEKDAYS}|yesterday|today(?!'s)|tonight)\b|\d{{4}}-\d{{1,2}}-\d{{1,2}}|\b\d{{1,2}}[/.]\d{{1,2}}[/.]\d{{2,4}}\b",
    re.IGNORECASE,
)
_UNIT = re.compile(r"\b(?:days?|weeks?|fortnight|months?|years?)\b", re.IGNORECASE)
_RELATIVE_CUE = re.compile(r"\b(?:ago|last|this|next|past|previous)\b", re.IGNORECASE)
# A month name alone is a date only after a word that makes it one ("in May", "last May", "May 2026", "3 May"):
# "Can I use May as a name?" names no time.
_BARE_MONTH = re.compile(rf"^\s*{_MONTH}\s*$", re.IGNORECASE)
_MONTH_CUE = re.compile(r"\b(?:in|during|since|before|after|until|till|by|last|this|next|early|late|mid|of|from)\s*$",
                        re.IGNORECASE)  # fmt: skip
# A month or season with nothing that pins it to a year ("in April", "in spring"), in a question about what one does
# rather than did ("What do I sow in April?", "When should we prune in winter?"), names a time of every year: a
# planting calendar answers it, not the notes written last April. "did", "was" or a year make it a date again.
_HABITUAL = re.compile(r"\b(?:do|does|should|shall|can|must)\s+(?:i|we|you|one|they)\b", re.IGNORECASE)
_PAST = re.compile(r"\b(?:did|was|were|had|ago)\b", re.IGNORECASE)
_PINNED = re.compile(r"\d|\b(?:this|last|next|past|previous)\b", re.IGNORECASE)
_IN = re.compile(r"^\s*(?:in|during)\s+", re.IGNORECASE)
# A weekday naming a thing of every week ("Are Wednesday intervals part of my training week?", "the Sunday roast"):
# followed by a word, after no word that makes it a day ("on", "last", "this", ...), in a question not about the past.
_BARE_WEEKDAY = re.compile(rf"^\s*(?:the\s+)?{_WEEKDAYS}\s*$", re.IGNORECASE)
_DAY_CUE = re.compile(r"\b(?:on|last|this|next|that|since|before|after|until|till|by|from)\s*$", re.IGNORECASE)
# "When did I last bake bread?" asks for the latest time as surely as "the last time I baked bread"; so do asking
# after news of one's own affairs ("any update on the beans?", "status of my calf?", "where are we with the slugs?").
_LATEST = re.compile(
    r"\b(?:latest|most recent(?:ly)?|newest|(?:the\s+)?last time|any news|anything new|(?:any|an)\s+updates?\s+"
    r"(?:on|about)|status\s+of\s+(?:my|our)|where\s+are\s+we\s+(?:with|on|at)|where\s+did\s+(?:we|i)\s+leave|"
    r"what'?s\s+new\s+(?:with|on)|in\s+the\s+end)\b",
    re.IGNORECASE,
)
# How a thing stands, asked as its progress ("how are the onions doing?", "how is the kitchen coming along?") or its
# outcome ("did the LED strip ever get sorted?"): the latest, though no word of the question only names the time.
_HOW_IT_STANDS = re.compile(
    r"^\s*how(?:\s+(?:is|are)|'s)\b[^?]*\b(?:doing|going(?!\s+to\b)|holding up|getting on|coming along)\b"
    r"|\bever\s+(?:get|got)\b",
    re.IGNORECASE,
)
# The state of things as of the asker's now ("what am I aiming for now?", "which flour these days?", "am I supposed to
# be doing intervals at the moment?", "are we still getting solar panels?"): the latest word on it, a later plan
# having replaced an earlier one. "now" only ending its clause ("and now it fails to compile" tells a story; "what
# now?" asks what to do), "still" only in a question whether a state holds ("do I still need a backup?" asks what is
# needed, not what changed).
_CURRENT = re.compile(
    r"\b(?:(?<!\bwhat\s)(?<!\bwhat\s\s)(?:(?:until|till|by|up to)\s+)?now(?=\s*(?:[?.!,;]|$))|right now|currently|"
    r"at the moment|at present|these days|nowadays)\b",
    re.IGNORECASE,
)
_STILL = re.compile(r"^\s*(?:is|are|am)\s+(?:i|we|they|it|the|my|our)\b[^?]*\bstill\b", re.IGNORECASE)
# "my last loaf", "our last trip", and in a question about the past "the last renewal": the latest of a thing. Not
# "the last step" of a how-to, nor a time ("last week", "the last two months", "last May"), read elsewhere.
_TIME_AFTER_LAST = (
    rf"(?:{_MONTH}|{_WEEKDAYS}|\d+|one|two|three|four|five|six|few|couple|several|times?|days?|nights?|weeks?|"
    r"weekends?|fortnight|months?|years?|spring|summer|autumn|fall|winter|christmas|easter)\b"
)
_LAST_THING = re.compile(
    rf"(?:\b(?P<owner>my|our|the)\s+|^\s*)(?P<last>last)\s+(?!{_TIME_AFTER_LAST})(?=[a-z])", re.IGNORECASE
)
# "When were the smoke alarm batteries last done?": "last" before a past participle ("done", "serviced"), not a noun
# ("the last train") nor a time ("last week"), asks for the latest.
_LAST_DONE = re.compile(
    r"\bwhen\b[^?]*\blast\s+(?:\w+ed|done|seen|made|had|got|gotten|taken|given|been|gone|run|eaten|read|paid|"
    r"bought|sent|put|set|cut|heard|spoken|written|worn)\b",
    re.IGNORECASE,
)
# "When was Rui last round?", "when were we last at the cottage?": "last" after the subject of a when-question in the
# past, not "the last train" (a last thing) nor "last week" (a time).
_WHEN_LAST = re.compile(
    rf"\bwhen\s+(?:was|were)\b[^?]{{0,200}}?(?<!\bthe\s)(?<!\bmy\s)(?<!\bour\s)\blast\b(?!\s+{_TIME_AFTER_LAST})",
    re.IGNORECASE,
)
_LAST_DID = re.compile(r"\b((?:did|have|has)\s+(?:i|we|you|he|she|they))\s+last\b", re.IGNORECASE)
# A calendar word's possessive ("Saturday's long run", "last week's meeting") is the day or week itself. (Not
# "today's": "today's date" in a how-to names no day.)
_POSSESSIVE = re.compile(rf"\b({_WEEKDAYS}|yesterday|week|month|year)'s\b", re.IGNORECASE)
# A weekend, which dateparser does not read: "last weekend" is the last one over before today, "this weekend" and
# "the weekend" the latest one begun by today.
_WEEKEND = re.compile(r"\b(?:(?P<which>last|this|past)|(?:at|over|on)?\s*the)\s+weekend\b", re.IGNORECASE)
_RANGE = re.compile(r"\b(?:between|from)\s+(?P<first>.+?)\s+(?:and|to|until|till|-)\s+(?P<second>.+?)(?=[?.!,;]|$)",
                    re.IGNORECASE)  # fmt: skip
_OPEN = re.compile(r"\b(?P<word>since|before|after|until|till)\s+(?P<what>.+?)(?=[?.!,;]|$)", re.IGNORECASE)
_SEASON = re.compile(
    r"\b(?P<which>this|last|in the|in|during the|during)\s+(?P<season>spring|summer|autumn|fall|winter)\b",
    re.IGNORECASE,
)
_DAY_NUMBER = re.compile(r"^\s*\d{1,2}(?:st|nd|rd|th)?")
_WEEK_BEFORE_LAST = re.compile(r"\b(?:the\s+)?week before last\b", re.IGNORECASE)
_LEADING_PREPOSITION = re.compile(r"\b(?:in|on|during|from|of|at|for)\s*$", re.IGNORECASE)
_SPACES = re.compile(r"\s{2,}")
# Meteorological seasons, by their first month (the northern hemisphere's).
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}


@dataclass(frozen=True)
class TimeIntent:
    range: TimeRange | None
    latest: bool
    query: str
    """The question without the words that only named the time, to search."""
    event: TimeEvent | None = None
    """A time named by events, to be found in the notes before there is a range (see `TimeEvent`)."""


# A question names its time in a few words. A long one (a passage pasted with a question about it) has its time read
# from its last sentence, else its first, where such a question asks, each of at most EDGE_CHARS: the passage's own
# dates are not the asker's, and the date parser costs about a millisecond per date-like word (8,000 characters of
# them took 3 s).
EDGE_CHARS = 300
_SENTENCE_END = re.compile(r"[.!?:;](?=\s)")


def read_time(question: str, now: datetime, anchor: date | None = None) -> TimeIntent:
    """The time `question` names, relative to `now` (aware; its own time zone decides what "today" is), or, for an
    offset with nothing to be from ("and the day after?"), relative to `anchor`, a day the conversation named."""
    if len(question) <= 3 * EDGE_CHARS:
        return _read_time(question, now, anchor)
    opening = _SENTENCE_END.search(question, 0, EDGE_CHARS)
    head_end = opening.end() if opening is not None else EDGE_CHARS
    tail_start = len(question) - EDGE_CHARS
    for close in _SENTENCE_END.finditer(question, tail_start, len(question.rstrip())):  # not the closing "?\n"
        tail_start = close.end()
    head, middle, tail = question[:head_end], question[head_end:tail_start], question[tail_start:]
    for edge, before, after in ((tail, head + middle, ""), (head, "", middle + tail)):
        intent = _read_time(edge, now)
        if intent.range is not None or intent.latest or intent.event is not None:
            return replace(intent, query=_tidy(f"{before} {intent.query} {after}"))
    return TimeIntent(None, False, question)


def _read_time(question: str, now: datetime, anchor: date | None = None) -> TimeIntent:
    today = now.date()
    question = time_phrases.short_forms(question)
    last_thing = _last_thing(question)
    latest = (
        _LATEST.search(question)
        or _LAST_DID.search(question)
        or _LAST_DONE.search(question)
        or _WHEN_LAST.search(question)
        or last_thing
        or _HOW_IT_STANDS.search(question)
        or _CURRENT.search(question)
        or _STILL.search(question)
    )
    query = question
    if last_thing is not None:  # "my last loaf" is searched as "my loaf"; another "the last step" keeps its word
        query = query[: last_thing.start("last")] + query[last_thing.end() :]
    query = _LAST_DID.sub(r"\1", _CURRENT.sub(" ", _LATEST.sub(" ", query))) if latest else query
    query = time_phrases.normalised(_POSSESSIVE.sub(r"\1", query))
    offset = time_offsets.offset(query, anchor) if anchor is not None else None
    found = (
        (TimeRange(*offset) if offset is not None else None)
        or _between(query, now)
        or _open_ended(query, now)
        or _season(query, today)
        or _week_before_last(query, today)
        or _weekend(query, today)
        or _phrase(query, today)
        or _expression(query, now)
    )
    event = find_event(query) if found is None else None
    if found is not None or event is not None:
        query = _without(query, found.words if found is not None else event.words)  # type: ignore[union-attr]
    return TimeIntent(found, latest is not None, _tidy(query), event)


def _last_thing(question: str) -> re.Match[str] | None:
    """ "my last loaf", "last thing I did to the beds?", or "the last renewal" in a question about the past: see
    _LAST_THING."""
    for match in _LAST_THING.finditer(question):
        if (match["owner"] or "").lower() != "the" or _PAST.search(question):
            return match
    return None


def _phrase(question: str, today: date) -> TimeRange | None:
    found = time_phrases.phrase(question, today)
    return TimeRange(*found) if found is not None else None


def _settings(now: datetime) -> dict[str, object]:
    return {"RELATIVE_BASE": now.replace(tzinfo=None), "PREFER_DATES_FROM": "past", "REQUIRE_PARTS": []}


def _span(text: str, now: datetime) -> tuple[date, date] | None:
    """The days one date expression names, by its granularity; None when it names no day or longer."""
    if not (_CALENDAR_WORD.search(text) or (_UNIT.search(text) and _RELATIVE_CUE.search(text))):
        return None
    data = DateDataParser(languages=["en"], settings=_settings(now)).get_date_data(text)
    if data.date_obj is None:
        return None
    point = data.date_obj.date()
    if data.period == "week":
        monday = point - timedelta(days=point.weekday())
        return monday, monday + timedelta(days=6)
    if data.period == "month":
        return point.replace(day=1), point.replace(day=calendar.monthrange(point.year, point.month)[1])
    if data.period == "year":
        return date(point.year, 1, 1), date(point.year, 12, 31)
    if data.period in ("day", None):
        return point, point
    return None  # a time of day: hours, minutes, seconds


def _expression(question: str, now: datetime) -> TimeRange | None:
    for words, _ in search_dates(question, languages=["en"], settings=_settings(now)) or []:
        if _BARE_MONTH.match(words) and not _MONTH_CUE.search(question[: question.find(words)]):
            continue
        if _BARE_MONTH.match(_IN.sub("", words)) and _habitual(question, words):
            continue
        if _BARE_WEEKDAY.match(words) and _weekly(question, words):
            continue
        days = _span(words, now)
        if days is not None and days[0] <= now.date():
            return TimeRange(days[0], min(days[1], now.date()), words)
    return None


def _weekly(question: str, words: str) -> bool:
    """Whether the weekday `words` names a thing of every week in `question`: see _BARE_WEEKDAY."""
    at = question.find(words)
    after = question[at + len(words) :]
    return bool(re.match(r"\s+[A-Za-z]", after)) and not _DAY_CUE.search(question[:at]) and not _PAST.search(question)


def _between(question: str, now: datetime) -> TimeRange | None:
    match = _RANGE.search(question)
    if match is None:
        return None
    first, second = match["first"], match["second"]
    if first.strip().isdigit():  # "between 1 and 15 May": the first end takes the second's month and year
        first = f"{first.strip()} {_DAY_NUMBER.sub('', second).strip()}"
    start, end = _span(first, now), _span(second, now)
    if start is None or end is None or start[0] > end[1]:
        return None
    return TimeRange(start[0], end[1], match.group(0))


def _open_ended(question: str, now: datetime) -> TimeRange | None:
    match = _OPEN.search(question)
    if match is None:
        return None
    days = _span(match["what"], now)
    if days is None:  # "since the showroom visit": an event, not a date
        return None
    word = match["word"].lower()
    if word == "since":
        return TimeRange(days[0], now.date(), match.group(0))
    if word == "after":
        return TimeRange(days[1] + timedelta(days=1), now.date(), match.group(0))
    if word == "before":
        return TimeRange(None, days[0] - timedelta(days=1), match.group(0))
    return TimeRange(None, days[1], match.group(0))


def _season(question: str, today: date) -> TimeRange | None:
    match = _SEASON.search(question)
    if match is None or _habitual(question, match.group(0)):
        return None
    first_month = _SEASON_START[match["season"].lower()]
    which = (match["which"] or "").lower()
    # "in spring" is the latest spring begun by today; "this summer" is this year's, begun or not.
    year = today.year if which == "this" or (today.month, today.day) >= (first_month, 1) else today.year - 1
    if first_month == 12 and today.month < 3:
        year = today.year - 1  # the winter that began last December
    if which == "last":
        year -= 1
    start = date(year, first_month, 1)
    if start > today:
        return None  # a season still to come names when something is planned, not when its notes were written
    last_month_start = date(year + (first_month + 2) // 13, (first_month + 1) % 12 + 1, 1)
    end = last_month_start.replace(day=calendar.monthrange(last_month_start.year, last_month_start.month)[1])
    return TimeRange(start, min(end, today), match.group(0))


def _weekend(question: str, today: date) -> TimeRange | None:
    match = _WEEKEND.search(question)
    if match is None:
        return None
    saturday = today - timedelta(days=(today.weekday() - 5) % 7)  # the latest Saturday up to today
    if (match["which"] or "").lower() in ("last", "past") and today.weekday() in (5, 6):
        saturday -= timedelta(days=7)  # on a weekend, "last weekend" is the one before it
    return TimeRange(saturday, min(saturday + timedelta(days=1), today), match.group(0).strip())


def _habitual(question: str, words: str) -> bool:
    """Whether `words` (a month or season) name a time of every year in `question`: see _HABITUAL."""
    before = question[: question.find(words)].split()[-1:]  # "last April": the word before pins it too
    return (
        not _PINNED.search(" ".join([*before, words]))
        and bool(_HABITUAL.search(question))
        and not _PAST.search(question)
    )


def _week_before_last(question: str, today: date) -> TimeRange | None:
    match = _WEEK_BEFORE_LAST.search(question)
    if match is None:
        return None
    monday = today - timedelta(days=today.weekday() + 14)
    return TimeRange(monday, monday + timedelta(days=6), match.group(0))


def _without(question: str, words: str) -> str:
    at = question.find(words)
    if at < 0:
        return question
    before = _LEADING_PREPOSITION.sub("", question[:at])
    return before + " " + question[at + len(words) :]


def _tidy(text: str) -> str:
    text = _SPACES.sub(" ", text).strip().lstrip(",;: ")
    # Each match starts where its run does (tried inside a long run too, they were quadratic).
    return re.sub(r"(?<![,;:])[,;:]+(?=[?.!])", "", re.sub(r"(?<!\s)\s+([?.!,;])", r"\1", text))
