"""A question's time applied to a ranking: the range with its soft edge, and "latest" (pure functions)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.fusion import Candidate, Fused
from secondbrain.retrieve.time_scope import SOFT_EDGE_SHARE, at_events, reorder, scope

NOW = datetime(2026, 11, 30, 18, 0, tzinfo=UTC)


def fused(*scores: float) -> list[Fused]:
    return [Fused(Candidate(i, i, 0, 1, 1, score), score) for i, score in enumerate(scores)]


def test_last_week_searches_the_week_and_its_margin_without_its_words() -> None:
    timed = scope("What did I decide about the garden last week?", NOW, Filters(folders=("Journal",)))
    assert timed is not None and timed.intent.query == "What did I decide about the garden?"
    assert (timed.filters.date_from, timed.filters.date_to) == (date(2026, 11, 20), date(2026, 12, 2))
    assert timed.filters.folders == ("Journal",), "the request's own filters stay"
    assert timed.describe() == "Notes dated 23\u201329 November 2026"


def test_an_explicit_date_filter_wins_and_a_question_without_time_has_no_scope() -> None:
    assert scope("the garden last week", NOW, Filters(date_from=date(2026, 1, 1))) is None
    assert scope("How do I water the tomatoes?", NOW, Filters()) is None


def test_a_passage_in_the_margin_ranks_behind_one_in_the_range() -> None:
    timed = scope("the garden last week", NOW, Filters())
    assert timed is not None
    dates = {0: (date(2026, 11, 21), date(2026, 11, 21)), 1: (date(2026, 11, 25), date(2026, 11, 25))}
    ranked = reorder(fused(0.9, 0.6), dates, timed, frozenset({0, 1}))
    assert [item.candidate.chunk_id for item in ranked] == [1, 0]
    assert ranked[1].score == 0.9 * SOFT_EDGE_SHARE


def test_a_passage_dated_only_by_its_files_time_ranks_after_every_one_the_notes_date_then_or_near() -> None:
    timed = scope("the garden last week", NOW, Filters())
    assert timed is not None
    # 0 is dated only by its file's modification time, which falls in the range: that says nothing of its content.
    # 2 is dated in the margin, and still comes before it.
    dates = {
        0: (date(2026, 11, 25), date(2026, 11, 25)),
        1: (date(2026, 11, 24), date(2026, 11, 24)),
        2: (date(2026, 11, 21), date(2026, 11, 21)),
    }
    ranked = reorder(fused(0.9, 0.6, 0.3), dates, timed, frozenset({1, 2}))
    assert [item.candidate.chunk_id for item in ranked] == [1, 2, 0]


def test_latest_puts_the_newest_relevant_first_and_leaves_the_weak_where_they_were() -> None:
    timed = scope("my latest note on the Lisbon trip", NOW, Filters())
    assert timed is not None and timed.filters.date_to == date(2026, 11, 30), "nothing dated after now"
    dates = {
        0: (date(2026, 5, 1), date(2026, 5, 1)),
        1: (date(2026, 6, 1), date(2026, 6, 1)),
        2: (date(2026, 11, 1), date(2026, 11, 1)),
    }
    ranked = reorder(fused(0.9, 0.8, 0.2), dates, timed, frozenset({0, 1, 2}))
    assert [item.candidate.chunk_id for item in ranked] == [1, 0, 2]
    assert timed.describe() == "Latest first"


def test_latest_goes_by_the_notes_own_dates_not_a_files_modification_time() -> None:
    """A project note edited today (dated only by its file's mtime) is not the newest note on the trip."""
    timed = scope("my latest note on the Lisbon trip", NOW, Filters())
    assert timed is not None
    dates = {0: (date(2026, 11, 30), date(2026, 11, 30)), 1: (date(2026, 5, 1), date(2026, 5, 1)),
             2: (date(2026, 6, 1), date(2026, 6, 1))}  # fmt: skip
    ranked = reorder(fused(0.9, 0.8, 0.7), dates, timed, content_dated=frozenset({1, 2}))
    assert [item.candidate.chunk_id for item in ranked] == [2, 1, 0]


def test_an_events_range_has_no_margin() -> None:
    """A margin was tried for "the day after Sintra" (its note written a day late) and not kept: when the event's
    day is wrong, the empty range's fall back to every note is what finds the answer."""
    timed = scope("The day after Sintra, where did we go?", NOW, Filters())
    assert timed is not None
    found = at_events(timed, (date(2026, 5, 19), None), NOW, Filters())
    assert found is not None and found.intent.range is not None
    assert (found.intent.range.start, found.intent.range.end) == (date(2026, 5, 20), date(2026, 5, 20))
    assert (found.filters.date_from, found.filters.date_to) == (date(2026, 5, 20), date(2026, 5, 20))
    assert found.describe() == "Notes dated 20 May 2026 (Sintra, 19 May 2026)"


def test_a_day_at_the_calendars_edge_makes_no_range_and_the_question_is_searched_as_asked() -> None:
    # Found by a probe: a range's margin ran past 1 January 0001 or 31 December 9999 and raised OverflowError, an
    # INTERNAL error on every door.
    now = datetime(2026, 12, 3, 12, tzinfo=UTC)
    for question in ("what did I write before 1 January 0001?", "notes between 1 Jan 9999 and 31 Dec 9999"):
        assert scope(question, now, Filters()) is None
    assert scope("what did I write since 3 February?", now, Filters()) is not None
