"""Note-level search (`search_notes`): the query checked, the arms it runs, the hits' snippets, and hostile input,
on a real PostgreSQL with pgvector. What each statement matches and how it ranks is in tests/retrieve/store.
"""

from __future__ import annotations

import asyncpg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from secondbrain.errors import InvalidInput
from secondbrain.retrieve.modes import MODES, Mode
from secondbrain.retrieve.note_search import search_notes
from secondbrain.retrieve.store.notes import VECTOR_ONLY_FLOOR
from tests.retrieve.notes import NO_FILTERS, note, paths, search, write


async def test_lexical_snippet_marks_the_matched_words(pool: asyncpg.Pool) -> None:
    before = " ".join(f"word{i}" for i in range(200))
    after = " ".join(f"more{i}" for i in range(200))
    body = f"{before}\n\nThe **important** part: our retention policy keeps backups for 30 days.\n\n{after}"
    await write(pool, note("backups.md", body))
    [hit] = (await search(pool, "retention policy")).hits
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["retention policy"]  # the typed text, as typed
    [hit] = (await search(pool, "policy retention")).hits
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["retention", "policy"]
    # The note's own bold stays its markdown, never taken for a match (found by a user: **important** lit up).
    assert "**important**" in hit.snippet
    assert hit.snippet == "The **important** part: our retention policy keeps backups for 30 days."


async def test_a_table_rows_snippet_comes_with_its_header(pool: asyncpg.Pool) -> None:
    table = (
        "| month | sow or plant |\n|-------|--------------|\n| March | sow broad beans |\n| June  | sow French beans |"
    )
    await write(pool, note("Calendar.md", f"# Calendar\n\nWhen to sow.\n\n{table}\n"))
    [hit] = (await search(pool, "French")).hits
    assert hit.snippet == "| month | sow or plant |\n|---|---|\n| June | sow French beans |"
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["French"]


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
async def test_a_hits_heading_is_the_section_its_snippet_is_from(pool: asyncpg.Pool, mode: Mode) -> None:
    """The vector arm's best chunk (Rotation, here) may not be where the typed words are (Watering): the label
    follows the snippet."""
    watering = "Water the tomatoes every morning before nine."
    rotation = "Beans follow the brassicas; roots follow the beans."
    chunks = [(["Garden", "Watering"], watering, 0.2), (["Garden", "Rotation"], rotation, 0.9)]
    await write(pool, note("Garden.md", f"# Garden\n\n## Watering\n\n{watering}\n\n## Rotation\n\n{rotation}",
                           chunks=chunks))  # fmt: skip
    [hit] = (await search(pool, "tomatoes morning", mode)).hits
    assert hit.heading_path == ["Garden", "Watering"]
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["tomatoes", "morning"]
    assert "Beans" not in hit.snippet and "Garden >" not in hit.snippet

    [by_substring] = (await search(pool, "brassicas; roots", mode)).hits
    assert by_substring.heading_path == ["Garden", "Rotation"] and "brassicas" in by_substring.snippet


async def test_hybrid_lists_a_note_without_the_words_only_when_it_is_close_in_meaning(pool: asyncpg.Pool) -> None:
    # Found by a user: `quartz` listed all twelve demo notes, one of which says it; the vector arm always has
    # neighbours. Below the floor, a note that does not contain the words is not listed.
    near, far = VECTOR_ONLY_FLOOR + 0.1, VECTOR_ONLY_FLOOR - 0.1
    await write(
        pool,
        note("Kitchen.md", "A quartz worktop, pale grey.", chunks=[([], "A quartz worktop, pale grey.", far)]),
        note("Stone.md", "Granite and marble benches.", chunks=[([], "Granite and marble benches.", near)]),
        note("Garden.md", "Water the tomatoes.", chunks=[([], "Water the tomatoes.", far)]),
    )
    found = (await search(pool, "quartz", "hybrid")).hits
    assert [(hit.path, hit.contains) for hit in found] == [("Kitchen.md", True), ("Stone.md", False)]
    # A word no note holds: only what is close in meaning, each said to be so.
    related = (await search(pool, "countertop", "hybrid")).hits
    assert [(hit.path, hit.contains) for hit in related] == [("Stone.md", False)]
    # Lexical search lists only notes with the words, as before; vector search ranks by meaning, unfloored.
    assert [hit.path for hit in (await search(pool, "countertop", "lexical")).hits] == []
    assert len((await search(pool, "countertop", "vector")).hits) == 3


async def test_like_metacharacters_in_the_query_are_literal(pool: asyncpg.Pool) -> None:
    await write(
        pool,
        note("done.md", "The migration is 100% done."),
        note("points.md", "We scored 1000 points."),
        note("snake.md", "Rename my_var_name everywhere."),
        note("camel.md", "Rename myvarXname everywhere."),
    )
    assert await paths(pool, "100%") == ["done.md"]
    assert await paths(pool, "var_name") == ["snake.md"]


async def test_without_a_query_vector_the_vector_arm_is_skipped_with_the_reason(pool: asyncpg.Pool) -> None:
    await write(pool, note("a.md", "alpha beta", chunks=[([], "alpha beta", 0.9)]))
    vector = await search_notes(pool, "alpha", "vector", NO_FILTERS, 10, None, "embedder unavailable")
    assert (vector.hits, vector.vector_arm_ran, vector.vector_arm_skipped_reason) == (
        [],
        False,
        "embedder unavailable",
    )
    hybrid = await search_notes(pool, "alpha", "hybrid", NO_FILTERS, 10, None, "embedder unavailable")
    assert [hit.path for hit in hybrid.hits] == ["a.md"]
    assert not hybrid.vector_arm_ran and hybrid.vector_arm_skipped_reason == "embedder unavailable"
    assert [name for name, _ in hybrid.timings] == ["keyword"]


# --- bad input, limits ------------------------------------------------------------------------------------------


async def test_an_empty_query_asks_for_something_to_search_for(pool: asyncpg.Pool) -> None:
    for query in ("", "   ", "\n\t "):
        with pytest.raises(InvalidInput, match="type something to search for"):
            await search(pool, query)


async def test_query_length_and_limit_are_bounded(pool: asyncpg.Pool) -> None:
    await search(pool, "x" * 1000, "hybrid")
    with pytest.raises(InvalidInput, match="1,000"):
        await search(pool, "x" * 1001)
    with pytest.raises(InvalidInput, match="1,000"):
        await search(pool, "word " * 20_000)
    for limit in (0, -1, 101):
        with pytest.raises(InvalidInput, match="between 1 and 100"):
            await search(pool, "x", limit=limit)
    with pytest.raises(InvalidInput, match="mode"):
        await search(pool, "x", "fuzzy")  # type: ignore[arg-type]


NASTY = [
    "'; DROP TABLE vault_files; --",
    "postgres & vacuum | !x :* (",
    "a:* & !(b | c)",
    '"unbalanced quote',
    '""',
    "-",
    "--",
    " or or ",
    "%_%",
    "100%_\\",
    "\\",
    "$1 $2 ::text",
    "ﷺ" * 1000,
    "\u00a0\u2003word\u200b",
]


async def test_search_syntax_and_sql_metacharacters_never_raise(pool: asyncpg.Pool) -> None:
    await write(pool, note("a.md", "postgres vacuum and 100%_\\ of $1 ::text", chunks=[([], "x", 0.5)]))
    for mode in MODES:
        for query in NASTY:
            await search(pool, query, mode)
    assert await paths(pool, "100%_\\", "lexical") == ["a.md"]
    # tsquery operators are not operators to websearch_to_tsquery: this is "postgres vacuum" (and "and" a stopword).
    assert await paths(pool, "postgres & vacuum | !and :* (", "lexical") == ["a.md"]


# Text the arbitrary queries are partly drawn from, so that many of them match and run the snippet code too.
MIXED = 'Prix: 100 % «ça va» — naïve café, C++ & SQL: SELECT "x" FROM t; -- \\n _under_ ümlaut 日本語 ::text $1'


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.one_of(st.text(max_size=1_100), st.text(alphabet=MIXED, max_size=12)),
    mode=st.sampled_from(MODES),
)
@example(query="\x00", mode="lexical")
@example(query="a\x00b", mode="hybrid")
@example(query="\ud800", mode="lexical")
async def test_arbitrary_queries_raise_nothing_but_invalid_input(pool: asyncpg.Pool, query: str, mode: Mode) -> None:
    # An upsert of the same note: cheap to repeat for every example.
    await write(pool, note("mixed.md", f"{MIXED}\n{MIXED.upper()}", chunks=[(["Mixed"], MIXED, 0.5)]))
    try:
        result = await search(pool, query, mode)
    except InvalidInput:
        return
    for hit in result.hits:
        assert hit.path == "mixed.md" and isinstance(hit.snippet, str)
