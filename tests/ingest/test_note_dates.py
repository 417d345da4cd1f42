"""When a note and its passages are from: file names, front matter, dated headings, the modification time."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from secondbrain.date_sources import FILE_NAME, HEADING, MODIFIED, days_named
from secondbrain.ingest.note import parse_note
from secondbrain.ingest.note_dates import (
    DateSpan,
    file_name_date,
    heading_date,
    note_date,
    passage_date,
)

MTIME = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)


def dated(path: str, text: str = "# Note\n\nText.\n") -> tuple[DateSpan, list[str]]:
    warnings: list[str] = []
    note = parse_note(path, text)
    return note_date(path, note.frontmatter, MTIME, warnings, note.body), warnings


@pytest.mark.parametrize(
    ("path", "start", "end"),
    [
        ("Journal/2026-01-20.md", date(2026, 1, 20), date(2026, 1, 20)),
        ("Daily/2026-01-20 Standup.md", date(2026, 1, 20), date(2026, 1, 20)),
        ("20260120.md", date(2026, 1, 20), date(2026, 1, 20)),
        ("Weekly/2026-W04.md", date(2026, 1, 19), date(2026, 1, 25)),
        ("Monthly/2026-02.md", date(2026, 2, 1), date(2026, 2, 28)),
        ("Quarterly/2026-Q4.md", date(2026, 10, 1), date(2026, 12, 31)),
        ("Daily/2026/03-March/14-03-2026 Saturday.md", date(2026, 3, 14), date(2026, 3, 14)),
        ("14.03.2026.md", date(2026, 3, 14), date(2026, 3, 14)),
        ("2026.03.14 call.md", date(2026, 3, 14), date(2026, 3, 14)),
        ("Reviews/2026-03 March review.md", date(2026, 3, 1), date(2026, 3, 31)),
        ("Running/Runs 2025.md", date(2025, 1, 1), date(2025, 12, 31)),
        ("Money/Tax return 2024-25.md", date(2024, 1, 1), date(2025, 12, 31)),
    ],
)
def test_daily_and_periodic_note_names_are_their_days(path: str, start: date, end: date) -> None:
    assert file_name_date(path) == DateSpan(start, end, FILE_NAME)


@pytest.mark.parametrize(
    "path",
    ["Ideas.md", "2026-13-45.md", "1984.md", "Notes 2026-01-20.md", "2026-W60.md", "1.4.16 release notes.md",
     "12 March.md", "2026-03 2nd draft.md", "2001 A Space Odyssey.md", "Port 8080.md", "v2.2026.md", "1999-2026.md"],
)  # fmt: skip
def test_other_names_are_no_date(path: str) -> None:
    assert file_name_date(path) is None


@pytest.mark.parametrize(
    ("front_matter", "day", "source"),
    [
        ("date: 2026-01-20", date(2026, 1, 20), "front matter date"),
        ("created: 2026-01-20T09:15:00+01:00", date(2026, 1, 20), "front matter created"),
        ("Created: '2026-01-20 09:15'", date(2026, 1, 20), "front matter created"),
        ("updated: 2026-03-02\ncreated: 2026-01-20", date(2026, 1, 20), "front matter created"),
        ("modified: 2026-03-02", date(2026, 3, 2), "front matter modified"),
        ("date: 10/02/2026", date(2026, 2, 10), "front matter date"),
        ("created: 14.03.2026", date(2026, 3, 14), "front matter created"),
        ("date: 02/13/2026", date(2026, 2, 13), "front matter date"),
        ("date: 3 March 2026", date(2026, 3, 3), "front matter date"),
    ],
)
def test_front_matter_dates_as_obsidian_and_templates_write_them(front_matter: str, day: date, source: str) -> None:
    span, warnings = dated("Plan.md", f"---\n{front_matter}\n---\n# Plan\n\nText.\n")
    assert span == DateSpan(day, day, source) and warnings == []


def test_a_daily_notes_name_wins_over_its_front_matter() -> None:
    span, _ = dated("Journal/2026-01-20.md", "---\ncreated: 2026-01-22\n---\nText.\n")
    assert span == DateSpan(date(2026, 1, 20), date(2026, 1, 20), FILE_NAME)


def test_a_bad_date_is_a_warning_and_the_next_source_dates_the_note() -> None:
    span, warnings = dated("Plan.md", "---\ndate: next Tuesday\ncreated: '2026-02-30'\n---\nText.\n")
    assert span == DateSpan(date(2026, 11, 30), date(2026, 11, 30), MODIFIED)
    assert len(warnings) == 2 and "front matter date: 'next Tuesday' is not a date" in warnings[0]
    assert "created: '2026-02-30'" in warnings[1]


def test_without_any_date_the_modification_day_in_utc() -> None:
    late_evening_in_new_york = datetime.fromisoformat("2026-11-30T21:00:00-05:00")
    assert note_date("Plan.md", {}, late_evening_in_new_york, []).start == date(2026, 12, 1)


@pytest.mark.parametrize(
    ("heading", "day"),
    [
        ("2026-01-20", date(2026, 1, 20)),
        ("2026-01-20 Monday", date(2026, 1, 20)),
        ("20 January 2026", date(2026, 1, 20)),
        ("Tuesday, 3rd Feb 2026", date(2026, 2, 3)),
        ("January 20, 2026", date(2026, 1, 20)),
        ("Monday, January 20, 2026: the showroom", date(2026, 1, 20)),
        ("2026.02.10 — kickoff", date(2026, 2, 10)),
        ("12/03/26", date(2026, 3, 12)),
        ("10/02/2026 call with Ana", date(2026, 2, 10)),
        ("Decisions", None),
        ("2026 goals", None),
        ("31 February 2026", None),
        ("1.4.16", None),
        ("Tue 10 Feb", None),  # no year, and nothing to tell it from
    ],
)
def test_dated_headings(heading: str, day: date | None) -> None:
    assert heading_date(heading) == day


@pytest.mark.parametrize(
    ("heading", "near", "day"),
    [
        ("Tue 10 Feb", date(2026, 2, 11), date(2026, 2, 10)),
        # The weekday written says which year: 10 February was a Monday in 2025.
        ("Mon 10 Feb", date(2026, 2, 11), date(2025, 2, 10)),
        ("12 March", date(2026, 2, 11), date(2026, 3, 12)),
        ("Thursday 16th April", date(2026, 12, 1), date(2026, 4, 16)),
        ("March 12th", date(2025, 12, 20), date(2026, 3, 12)),
        ("12 March 2024", date(2026, 2, 11), date(2024, 3, 12)),
        ("10 things to pack", date(2026, 2, 11), None),
        ("May", date(2026, 2, 11), None),
    ],
)
def test_a_heading_without_its_year_is_read_near_a_day(heading: str, near: date, day: date | None) -> None:
    assert heading_date(heading, near=near) == day


def test_a_log_heading_without_its_year_takes_the_year_of_a_heading_above_or_the_notes() -> None:
    undated = DateSpan(date(2026, 11, 30), date(2026, 11, 30), MODIFIED)
    assert passage_date(["2025", "12 March"], undated) == DateSpan(date(2025, 3, 12), date(2025, 3, 12), HEADING)
    assert passage_date(["Allotment", "2026", "March", "Potatoes"], undated) == DateSpan(
        date(2026, 3, 1), date(2026, 3, 31), HEADING
    )
    week = DateSpan(date(2026, 2, 9), date(2026, 2, 15), FILE_NAME)
    assert passage_date(["Week 7", "Tue 10 Feb"], week).start == date(2026, 2, 10)
    # "March" alone names no year's month: a calendar of every year.
    assert passage_date(["Sowing", "March"], undated) == undated


def test_an_undated_logs_rows_and_a_weeks_items_date_their_passage_by_the_days_they_start_with() -> None:
    undated = DateSpan(date(2026, 11, 30), date(2026, 11, 30), MODIFIED)
    table = "| Date | Distance |\n|---|---|\n| Sat 14 Mar | 10k |\n| Tue 17 Mar | 5k |\n| Sat 21 Mar | 12k |"
    assert passage_date(["Runs"], undated, table) == DateSpan(date(2026, 3, 14), date(2026, 3, 21), "lines")
    week = DateSpan(date(2026, 1, 19), date(2026, 1, 25), FILE_NAME)
    assert passage_date([], week, "- Tue 20 Jan: kickoff\n- Wed 21 Jan: wireframes").start == date(2026, 1, 20)
    # A day outside a dated note's span is a plan, and a note of one day keeps its day.
    assert passage_date([], week, "- 3 March: dentist") == week
    day = DateSpan(date(2026, 1, 20), date(2026, 1, 20), FILE_NAME)
    assert passage_date([], day, "- Tue 20 Jan: kickoff") == day
    assert passage_date(["Runs"], undated, "Ran 10k on Sat 14 Mar.") == undated, "only a line's start dates it"


@pytest.mark.parametrize(
    ("body", "day"),
    [
        ("# Day 03 - Kyoto\n\nThursday 16th April. Rain all morning.", date(2026, 4, 16)),
        ("# Day 03 - Kyoto\n\nRain all morning.\n\nThursday 16th April.", None),
        ("Thursday 16th April. Rain all morning, then the temple.", date(2026, 4, 16)),
        ("# 10/02/2026 kickoff with Ana\n\nNotes.", date(2026, 2, 10)),
        ("**Sat 14 Mar** - parkrun, 24:10", date(2026, 3, 14)),
        ("16 December. Bought the tree.", date(2025, 12, 16)),  # not after the file's last change
        ("Rain all morning.", None),
    ],
)
def test_a_note_with_no_other_date_is_dated_by_its_title_or_first_line(body: str, day: date | None) -> None:
    span, _ = dated("Travel/Diary.md", body)
    assert (span.start, span.source) == ((day, "first line") if day else (date(2026, 11, 30), MODIFIED))


def test_a_passage_is_from_its_innermost_dated_heading_else_its_note() -> None:
    note = DateSpan(date(2026, 1, 1), date(2026, 1, 31), FILE_NAME)
    assert passage_date(["Log", "2026-01-20", "Notes"], note) == DateSpan(date(2026, 1, 20), date(2026, 1, 20), HEADING)
    assert passage_date(["2026-01-05", "Monday, January 20, 2026"], note).start == date(2026, 1, 20)
    assert passage_date(["Decisions"], note) == note


@given(st.text(max_size=60))
def test_any_heading_or_name_is_a_date_or_none_never_an_error(text: str) -> None:
    assert heading_date(text) is None or isinstance(heading_date(text), date)
    assert file_name_date(f"{text}.md") is None or isinstance(file_name_date(f"{text}.md"), DateSpan)


WRITTEN = date(2026, 3, 28)


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("Entered the Porto half marathon: 8 November, 35 euros.", {date(2026, 11, 8)}),
        ("the inspection on the 3rd of June 2025 went well", {date(2025, 6, 3)}),
        ("November 8th, 2027", {date(2027, 11, 8)}),
        ("Dec. 5", {date(2026, 12, 5)}),
        ("booked for 2026-04-02", {date(2026, 4, 2)}),
        # A day without its year is the first such day from a month before the note: a plan, or recent weeks.
        ("the roofer came on 20 March", {date(2026, 3, 20)}),
        ("the party on 1 February", {date(2027, 2, 1)}),
        ("the flat is ours from 14 to 21 May", {date(2026, 5, 14), date(2026, 5, 21)}),
        ("you may 2 times, at 8 min per km", set()),  # a month is capitalised in prose
        ("31 February and 2026-02-30", set()),
        # A countdown to a thing counts from the note's day; a duration or a retelling does not.
        ("Eighteen days to Porto.", {date(2026, 4, 15)}),
        ("two weeks until the move", {date(2026, 4, 11)}),
        ("twenty-one days to go", {date(2026, 4, 18)}),
        ("12 days till my race", {date(2026, 4, 9)}),
        ("It took 5 days to heal", set()),
        ("finished in ten days", set()),
        ("three days before the race", set()),
        ("A week to go!", {date(2026, 4, 4)}),
        ("1.5 weeks to go", set()),
        ("The drive took two days to Porto.", set()),
        ("We met a week to the day after the race.", set()),
    ],
)  # fmt: skip
def test_days_named_in_prose(text: str, days: set[date]) -> None:
    assert days_named(text, WRITTEN) == days


def test_a_countdown_at_the_end_of_the_calendar_names_no_day() -> None:
    assert days_named("30 days to go", date(9999, 12, 20)) == set()


@given(st.text(max_size=80))
def test_any_text_names_days_or_none_never_an_error(text: str) -> None:
    assert all(isinstance(day, date) for day in days_named(text, WRITTEN))
