"""A time named by events of the notes' own: "after the roofer's inspection", "once we were back from Lisbon",
"between demolition day and the electrician's first day", "the week we got back from Lisbon".

`find_event` reads the event out of a question; retrieval then finds each event's day in the notes (the best passage
the notes date that holds a word of it: the day its sentence about the event names, else the passage's own, see
`event_day`) and `TimeEvent.range_from` makes the range those days mark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from secondbrain.date_sources import days_named
from secondbrain.llm.quote_units import sentence_pieces
from secondbrain.llm.quote_words import key_set
from secondbrain.retrieve.time_range import TimeRange

# A time named by an event of the notes' own: "since the showroom visit", "after we got home from Galicia", "once we
# were back from Lisbon", "between pulling my calf and the first run back". The event is a thing (a determiner, a
# name, a possessive) or a clause with its subject or a gerund, of two words at least: "before nine", "after lunch"
# and a recipe's "until it doubles" name no event.
_EVENT_WORD = re.compile(
    r"\b(?:ever\s+)?(?P<word>since|before|after|until|till|once)\s+(?P<what>(?:(?!\b(?:who|what|when|where|which|how|why|did|do|"
    r"does)\b|\s[-\u2013]\s)[^?.!,;])+)",
    re.IGNORECASE,
)
# "the day before the electrician started", "in the days after the race", "the night before the porto half": the
# days next to the event, not all of time before or after it (as many days as the words say).
_NEXT_TO_EVENT = re.compile(r"\b(?:in\s+)?the\s+(?P<unit>day|night|morning|evening|days|week)\s*$", re.IGNORECASE)
_NEXT_DAYS = {"day": 1, "night": 1, "morning": 1, "evening": 1, "days": 7, "week": 7}
# "How did my first run after the Porto half go?": the question's own verb ends it, not the event.
_HOW_DID = re.compile(r"^\s*how\s+did\b", re.IGNORECASE)
_HOW_IT_WENT = re.compile(r"(?<!\s)\s+(?:go|turn out|work out)\s*$", re.IGNORECASE)
# "the week we got back from Lisbon", "the day Rui started": a span of days from an event of the notes.
_SPAN_OF_EVENT = re.compile(
    r"\bthe (?P<word>week|weekend|day) (?:that |when |after )?(?P<what>(?:we|i|he|she|they|my|our|[A-Z][\w-]+)\b"
    r"(?:(?!\b(?:who|what|when|where|which|how|why|did|do|does)\b)[^?.!,;])+)",
)
# A fragment with no verb at all ("bib number the night before the porto half") asks about what happened too.
# Its event is a thing ("the porto half", "Marta's move"), not a clause: a claim's "since they're cheap to run" or
# "after being injected" names no event.
_ANY_VERB = re.compile(r"\b(?:is|are|am|be|do|does|can|could|should|would|will|shall|must|how)\b", re.IGNORECASE)
_THING = re.compile(r"^(?:(?i:the|my|our)\b|[A-Z][\w-]*'s\b)")
_EVENTS_BETWEEN = re.compile(r"\b(?:in\s+)?between\s+(?P<first>.+?)\s+and\s+(?P<second>[^?.!,;]+)", re.IGNORECASE)
_EVENT_START = re.compile(
    r"^(?:(?i:the|my|our|a|an|we|i|he|she|they)\b|[A-Z\u00c0-\u00de][\w-]*\b|\w+'s\b|\w+ing\b)", re.UNICODE
)
_PRONOUN = re.compile(r"\b(?:it|them)\b", re.IGNORECASE)
# A question about what happened: a past auxiliary, or a subject and a verb in -ed ("we booked"), not a how-to's
# "embed" or "need".
_TOLD = re.compile(
    r"\b(?:did|was|were|had|has|have|happened)\b|\b(?:i|we|you|he|she|they)\s+"
    r"(?!(?:embed|need|feed|seed|speed|shed|bleed|breed|proceed|succeed|exceed)\b)\w+ed\b"
    # The common irregular pasts that are not also a present ("what went into the garden"; not "put" or "read").
    r"|\b(?:went|got|came|made|took|bought|saw|said|told|gave|ran|ate|drank|wrote|felt|kept|met|paid|sold|sent|"
    r"spent|thought|brought|built|began|broke|chose|flew|fell|grew|heard|knew|lost|rode|slept|spoke|stood|swam|"
    r"taught|threw|woke|won|wore)\b",
    re.IGNORECASE,
)
# A phrase ending on a preposition is no event but the rest of a question: "what's the minus after the type for?".
_UNFINISHED = re.compile(r"\b(?:for|to|of|with|about|in|on|at|from|by)\s*$", re.IGNORECASE)
# Which end of a span an event is: coming back, or setting off.
_RETURN = re.compile(
    r"\b(?:back|return(?:ed|ing)?|(?:got|get|came|come|flew|drove|arrived|arriving)\s+home)\b", re.IGNORECASE
)
_SETTING_OFF = re.compile(
    r"\b(?:fl(?:ew|y|ying)|went|go(?:ing)?|left|leav(?:e|ing)|set(?:ting)? off|arriv(?:ed|ing)|start(?:ed|ing)?)\b",
    re.IGNORECASE,
)
_NOT_EVENT_START = re.compile(r"^(?i:it|that|this|then|now|lunch|dinner|breakfast|bed|work|dark|noon)\b")


# The days "the week (weekend, day) we got back" spans after its event's day.
_EVENT_SPANS = {"week": 6, "weekend": 2, "day": 0}


@dataclass(frozen=True)
class TimeEvent:
    """A time named by events of the notes' ("after the roofer's inspection"): retrieval finds each event's day in
    the notes first, and the range is made of those days."""

    word: str
    """since, before, after, until, once, between (with `second`), or the span of days from it: week, weekend,
    day."""
    what: str
    """The event, as the question says it ("the roofer's inspection")."""
    words: str
    """The question's words that named the time."""
    second: str = ""
    """The other end of a "between ... and ...", when it is an event too."""
    next_days: int = 0
    """How many days next to the event "the day (days, week) before/after" it means; 0 for all of them."""

    def range_from(self, day: date | None, second_day: date | None, today: date) -> TimeRange | None:
        """The range the events' days make (None for a day not found): "after" an event begins on its day, as the
        note of that day may tell what followed it; "between" two events lies strictly inside when it can."""
        if self.word == "between":
            if day is None:
                return None
            if second_day is None or second_day <= day:
                # The second event is later than the first; found no later (or not at all), only the first holds.
                return TimeRange(day, today, self.words)
            inside = (day + timedelta(days=1), second_day - timedelta(days=1))
            return TimeRange(*(inside if inside[0] <= inside[1] else (day, second_day)), self.words)
        if day is None:
            return None
        if self.next_days and self.word in ("before", "after"):  # "the day before", "in the days after"
            if self.word == "before":
                return TimeRange(day - timedelta(days=self.next_days), day - timedelta(days=1), self.words)
            start = day + timedelta(days=1)
            return (
                TimeRange(start, min(day + timedelta(days=self.next_days), today), self.words)
                if start <= today
                else None
            )
        if self.word in ("since", "after", "once"):
            return TimeRange(day, today, self.words)
        if self.word in _EVENT_SPANS:  # "the week we got back": from that day on, as long as the span
            return TimeRange(day, min(day + timedelta(days=_EVENT_SPANS[self.word]), today), self.words)
        return TimeRange(None, day, self.words)


def find_event(question: str) -> TimeEvent | None:
    """Events mark a time only in a question about what happened ("what did we decide after the inspection?"): "How
    do I convert between Python lists and Rust vectors?" names none."""
    if (match := _EVENTS_BETWEEN.search(question)) is not None and _TOLD.search(question.replace(match[0], " ")):
        first, second = match["first"].strip(), match["second"].strip()
        # Between two things one of which is plainly an event, the other is one too ("demolition day").
        if (_names_event(first) or _names_event(second)) and len(first.split()) >= 2 and len(second.split()) >= 2:
            # "between switching to the T80 flour and giving up on it": the second's "it" is what the first is
            # about, and is searched as that ("giving up on to the T80 flour").
            about = first.split(maxsplit=1)[1]
            return TimeEvent("between", first, match.group(0).strip(), _PRONOUN.sub(about, second, count=1))
    if (match := _SPAN_OF_EVENT.search(question)) is not None and _names_event(match["what"].strip()):
        return TimeEvent(match["word"], match["what"].strip(), match.group(0).strip())
    for match in _EVENT_WORD.finditer(question):
        what, words = match["what"].strip(), match.group(0).strip()
        if _HOW_DID.match(question) and (went := _HOW_IT_WENT.search(what)):
            what, words = what[: went.start()], words[: len(words) - len(went[0])]
        rest = question.replace(words, " ")
        # Told as what happened: by the question ("what did we decide after ..."), by a state's start in the past
        # ("ever since the old kitchen got ripped out, where are we cooking?"; not a how-to's "after I passed it to
        # a function"), or a thing in a fragment with no verb.
        told = _TOLD.search(rest) or (match["word"].lower() == "since" and _TOLD.search(what))
        if _names_event(what) and (told or (_THING.match(what) and not _ANY_VERB.search(rest))):
            next_to = _NEXT_TO_EVENT.search(question[: match.start()])
            if next_to is not None:
                words = question[next_to.start() : match.start()] + words
            days = _NEXT_DAYS[next_to["unit"].lower()] if next_to is not None else 0
            return TimeEvent(match["word"].lower().replace("till", "until"), what, words, next_days=days)
    return None


def _names_event(what: str) -> bool:
    return (
        (len(what.split()) >= 2 or _is_name(what))
        and bool(_EVENT_START.match(what))
        and not _NOT_EVENT_START.match(what)
        and not _UNFINISHED.search(what)
    )


def _is_name(word: str) -> bool:
    """One word is an event when it is a name: "the day after Sintra", "since Évora" (a place for the time spent
    there). Not a word of no name ("after lunch"), nor "I"."""
    return len(word) > 1 and word[0].isupper() and all(part.isalnum() for part in word.split("-"))


def event_day(what: str, passage: str, written: date) -> date:
    """The day of the event `what` ("the porto half") by the best passage about it, which the notes date `written`:
    the one day named in a sentence that says most of the event ("Entered the Porto half marathon: 8 November",
    written in March, is of 8 November), else `written` (a journal tells of its own day)."""
    return named_event_day(what, passage, written) or written


def named_event_day(what: str, passage: str, written: date) -> date | None:
    """The day a sentence of `passage` saying most of the event `what` names for it (`event_day`), or None."""
    wanted = key_set(what)
    # A passage's sentences, each line apart (a list item, a heading): where a day named beside an event is its day.
    sentences = [sentence for line in passage.splitlines() for sentence in sentence_pieces(line, lowercase_starts=True)]
    shares = [(len(wanted & key_set(sentence)), sentence) for sentence in sentences]
    most = max((shared for shared, _ in shares), default=0)
    # Of the sentences that say as much of the event, one that names its day says when ("Last hard intervals before
    # the race. Eighteen days to Porto." dates "the race in porto" by the second).
    for shared, sentence in shares:
        if most and shared == most and (day := _day_of(what, days_named(sentence, written))) is not None:
            return day
    return None


def _day_of(what: str, named: set[date]) -> date | None:
    """The event's day of the days a sentence names: the one, or of a span's two ends ("the flat in Alfama for 14 to
    21 May") the last for a return ("we got back from Lisbon") and the first for a setting off ("we flew to
    Lisbon"); None when the sentence does not say which."""
    if len(named) == 1:
        return next(iter(named))
    if len(named) == 2:
        if _RETURN.search(what):
            return max(named)
        if _SETTING_OFF.search(what):
            return min(named)
    return None
