"""Times a follow-up names from a day the conversation named ("and the day after?"), ordinal days of a month, and a
holiday's name that names a thing of it rather than its days."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.question_time import read_time
from secondbrain.retrieve.time_offsets import anchor_day, offset
from secondbrain.retrieve.time_scope import scope

NOW = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)
KICKOFF = ["when was the fernhill kickoff", "Tuesday 10 February 2026 at Wellington Place."]


@pytest.mark.parametrize(
    ("question", "start", "end", "query"),
    [
        ("and the day after, what did i get done?", date(2026, 2, 11), date(2026, 2, 11), "and, what did i get done?"),
        ("what did the physio say two days later?", date(2026, 2, 12), date(2026, 2, 12), "what did the physio say?"),
        ("and the following week, what did I find?", date(2026, 2, 11), date(2026, 2, 17), "and, what did I find?"),
        ("what about the wednesday after, how many?", date(2026, 2, 11), date(2026, 2, 11), "what about, how many?"),
        ("and a couple of days before?", date(2026, 2, 7), date(2026, 2, 9), "and?"),
        ("and three weeks later?", date(2026, 2, 28), date(2026, 3, 6), "and?"),
        ("what about the weekend after?", date(2026, 2, 14), date(2026, 2, 15), "what about?"),
    ],
)  # fmt: skip
def test_an_offset_is_from_the_day_the_conversation_named_last(
    question: str, start: date, end: date, query: str
) -> None:
    timed = scope(question, NOW, Filters(), KICKOFF)
    assert timed is not None and timed.intent.range is not None, question
    assert (timed.intent.range.start, timed.intent.range.end) == (start, end)
    assert timed.intent.query == query


def test_an_offset_from_an_event_is_the_events_and_one_with_no_earlier_day_is_read_as_before() -> None:
    # "the day after the move" names an event, found in the notes (time_events), not the conversation's day.
    timed = scope("the day after the move, what broke?", NOW, Filters(), KICKOFF)
    assert timed is not None and timed.intent.range is None and timed.intent.event is not None
    assert scope("and the day after?", NOW, Filters(), ["what did I cook?", "Dal."]) is None


def test_the_earlier_day_is_the_latest_messages_first_and_a_yearless_day_is_the_last_one_so_far() -> None:
    earlier = ["when did I plant the potatoes?", "Saturday 7 March, and the onions on 21 March."]
    assert anchor_day(earlier, date(2026, 4, 10)) == date(2026, 3, 7)
    assert anchor_day([*earlier, "and the beans?", "No day is noted for the beans."], date(2026, 4, 10)) == date(
        2026, 3, 7
    )
    assert anchor_day(["and then?"], date(2026, 4, 10)) is None


@given(st.text(max_size=80))
def test_any_follow_up_reads_to_a_range_or_none(question: str) -> None:
    found = offset(question, date(2026, 2, 10))
    assert found is None or found[0] <= found[1]


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("how long did the fourth sunday of october 2025 run take", date(2025, 10, 26), date(2025, 10, 26)),
        ("what was on the second Monday of March?", date(2026, 3, 9), date(2026, 3, 9)),
        ("the last week of January, what did I ship?", date(2026, 1, 25), date(2026, 1, 31)),
        ("where were we the first weekend in May?", date(2026, 5, 2), date(2026, 5, 3)),
    ],
)  # fmt: skip
def test_an_ordinal_day_or_week_of_a_month(question: str, start: date, end: date) -> None:
    intent = read_time(question, NOW)
    assert intent.range is not None and (intent.range.start, intent.range.end) == (start, end), question


def test_a_holidays_name_before_a_noun_is_a_thing_of_it_not_its_days() -> None:
    assert read_time("when is the christmas concert, as things stand?", NOW).range is None
    assert read_time("what did we do over christmas?", NOW).range is not None
    assert read_time("what did I get for christmas 2025?", NOW).range is not None
