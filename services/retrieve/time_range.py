"""A range of days a question asks about, as retrieval applies it and the plan says it ("Notes dated 23-29 November
2026"): read from its words (`question_time`) or from the days of events the notes hold (`time_events`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from secondbrain.date_sources import day_words


@dataclass(frozen=True)
class TimeRange:
    """The days a question asks about, both inclusive; an open end is None."""

    start: date | None
    end: date | None
    words: str
    """The question's words that named it."""

    def describe(self) -> str:
        """How the plan shows it: "Notes dated 23-29 November 2026"."""
        return f"Notes dated {_span_words(self.start, self.end)}"


def _span_words(start: date | None, end: date | None) -> str:
    if start is None and end is None:
        return "any time"
    if start is None:
        return f"up to {day_words(end, year=True)}"  # type: ignore[arg-type]
    if end is None or end == start:
        return ("from " if end is None else "") + day_words(start, year=True)
    if start.year != end.year:
        return f"{day_words(start, year=True)} to {day_words(end, year=True)}"
    if start.month != end.month:
        return f"{day_words(start, year=False)} to {day_words(end, year=True)}"
    return f"{start.day}\u2013{day_words(end, year=True)}"
