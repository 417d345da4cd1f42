"""Note-level search (keyword, semantic, hybrid) on a real PostgreSQL with pgvector.

Notes are written the way ingest writes them (`store.write_note`). Their chunks get constructed 384-d unit vectors
whose cosine similarity to the query vector (the first axis) is chosen per chunk, so the semantic ranking is known.
"""

from __future__ import annotations

import asyncio
import math
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime

import asyncpg
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pgvector.asyncpg import register_vector

from secondbrain.db import Database
from secondbrain.errors import InvalidInput, Unavailable
from secondbrain.ingest import store
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.note_search import (
    NoteSearchResult,
    SearchMode,
    search_notes,
    semantic_statement,
)

DIM = 384
QUERY_VECTOR = np.eye(DIM, dtype=np.float32)[0]
NO_FILTERS = Filters()
MODES: tuple[SearchMode, ...] = ("keyword", "semantic", "hybrid")


def unit(similarity: float, seed: int) -> np.ndarray:
    """A unit vector whose cosine similarity with QUERY_VECTOR is exactly `similarity`."""
    noise = np.random.default_rng(seed).standard_normal(DIM)
    noise[0] = 0.0
    noise /= np.linalg.norm(noise)
    return (similarity * QUERY_VECTOR + math.sqrt(1 - similarity**2) * noise).astype(np.float32)


def note(
    path: str,
    body: str,
    *,
    title: str | None = None,
    tags: Sequence[str] = (),
    chunks: Sequence[tuple[Sequence[str], str, float]] | None = None,
) -> store.NoteRow:
    """A note as ingest stores it; `chunks` are (heading path, text, similarity to the query vector), by default
    one chunk holding the body, orthogonal to the query vector."""
    title = title if title is not None else path.rsplit("/", 1)[-1].removesuffix(".md")
    seed = zlib.crc32(path.encode())
    rows = [
        store.ChunkRow(
            index=i,
            heading_path=list(headings),
            start_line=1 + i,
            end_line=1 + i,
            content=f"{' > '.join((title, *headings))}\n\n{text}",
            context="",
            token_count=len(text.split()),
            embedding=unit(similarity, seed + i),
        )
        for i, (headings, text, similarity) in enumerate(chunks if chunks is not None else [((), body, 0.0)])
    ]
    return store.NoteRow(
        path=path, title=title, body=body, frontmatter={}, aliases=[], tags=list(tags),
        content_hash=str(seed), mtime=datetime.now(UTC), size=len(body), status="indexed", chunks=rows,
    )  # fmt: skip


@pytest.fixture
def pool(db: Database) -> asyncpg.Pool:
    """The pool the services use (`secondbrain.db.Database`, pgvector's codec registered on every connection)."""
    return db.pool


async def write(pool: asyncpg.Pool, *notes: store.NoteRow) -> None:
    async with pool.acquire() as connection:
        for row in notes:
            await store.write_note(connection, row)


async def search(
    pool: asyncpg.Pool,
    query: str,
    mode: SearchMode = "keyword",
    filters: Filters = NO_FILTERS,
    limit: int = 10,
    vector: np.ndarray | None = QUERY_VECTOR,
) -> NoteSearchResult:
    return await search_notes(pool, query, mode, filters, limit, vector)


async def paths(pool: asyncpg.Pool, query: str, mode: SearchMode = "keyword", **kwargs: object) -> list[str]:
    return [hit.path for hit in (await search(pool, query, mode, **kwargs)).hits]


# --- keyword ----------------------------------------------------------------------------------------------------


async def test_keyword_requires_every_word_and_honours_phrases_exclusions_and_or(pool: asyncpg.Pool) -> None:
    await write(
        pool,
        note("tuning.md", "Postgres vacuum tuning: the garbage collector runs at night."),
        note("replication.md", "Postgres replication keeps a standby. A collector of garbage is elsewhere."),
        note("cleaner.md", "The vacuum cleaner is broken."),
    )
    assert await paths(pool, "postgres vacuum") == ["tuning.md"]
    assert await paths(pool, '"garbage collector"') == ["tuning.md"]
    assert await paths(pool, "garbage -runs") == ["replication.md"]
    assert sorted(await paths(pool, "replication or cleaner")) == ["cleaner.md", "replication.md"]
    assert await paths(pool, "postgres kubernetes") == []


async def test_substring_finds_part_of_a_word_and_a_path_fragment(pool: asyncpg.Pool) -> None:
    await write(
        pool,
        note("Projects/Kubernetes-migration.md", "We moved the clusters.\nNothing else happened.", title="K8s move"),
        note("Other.md", "Unrelated text about gardens."),
    )
    assert await paths(pool, "netes-mig") == ["Projects/Kubernetes-migration.md"]
    [hit] = (await search(pool, "USTERS")).hits
    assert hit.path == "Projects/Kubernetes-migration.md"
    assert hit.snippet == "We moved the cl**usters**."
    assert hit.heading_path == []


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


async def test_title_match_ranks_above_body_only_matches(pool: asyncpg.Pool) -> None:
    await write(
        pool,
        note("bread.md", "Sourdough sourdough sourdough: the sourdough starter needs feeding.", title="Bread"),
        note("baking/sourdough.md", "A recipe for the weekend.", title="Sourdough"),
        note("Sourdough-log/week1.md", "Fed it twice.", title="Week 1"),
    )
    assert await paths(pool, "sourdough") == ["baking/sourdough.md", "Sourdough-log/week1.md", "bread.md"]


async def test_keyword_snippet_marks_the_matched_words(pool: asyncpg.Pool) -> None:
    before = " ".join(f"word{i}" for i in range(200))
    after = " ".join(f"more{i}" for i in range(200))
    body = f"{before}\n\nThe **important** part: our retention policy keeps backups for 30 days.\n\n{after}"
    await write(pool, note("backups.md", body))
    [hit] = (await search(pool, "retention policy")).hits
    assert "**retention**" in hit.snippet and "**policy**" in hit.snippet
    assert "\n" not in hit.snippet and len(hit.snippet) <= 320
    assert "word0 " not in hit.snippet  # an excerpt around the match, not the start of the note


# --- semantic ---------------------------------------------------------------------------------------------------


async def test_semantic_collapses_chunks_to_notes_and_ranks_the_planted_note_first(pool: asyncpg.Pool) -> None:
    await write(
        pool,
        note(
            "planted.md",
            "three sections",
            chunks=[
                (["Setup"], "Install the thing.", 0.85),
                (["Design", "Storage"], "Vectors live in one table.", 0.95),
                (["Notes"], "Misc.", 0.8),
            ],
        ),
        note("second.md", "b", chunks=[([], "Second best.", 0.7), ([], "Weak.", 0.1)]),
        note("third.md", "c", chunks=[(["H"], "Third.", 0.5)]),
        note("unrelated.md", "d", chunks=[([], "Far away.", -0.4)]),
    )
    result = await search(pool, "anything", "semantic")
    assert result.vector_arm_ran and result.vector_arm_skipped_reason == ""
    assert [hit.path for hit in result.hits] == ["planted.md", "second.md", "third.md", "unrelated.md"]
    best = result.hits[0]
    assert best.heading_path == ["Design", "Storage"]
    assert best.snippet == "Vectors live in one table."  # the best chunk, without its "Title > Heading" prefix
    assert best.score == pytest.approx(0.95, abs=1e-3)
    assert [name for name, _ in result.timings] == ["semantic"]
    assert [hit.path for hit in (await search(pool, "anything", "semantic", limit=2)).hits] == [
        "planted.md",
        "second.md",
    ]


async def test_without_a_query_vector_the_semantic_arm_is_skipped_with_the_reason(pool: asyncpg.Pool) -> None:
    await write(pool, note("a.md", "alpha beta", chunks=[([], "alpha beta", 0.9)]))
    semantic = await search_notes(pool, "alpha", "semantic", NO_FILTERS, 10, None, "embedder unavailable")
    assert (semantic.hits, semantic.vector_arm_ran, semantic.vector_arm_skipped_reason) == (
        [],
        False,
        "embedder unavailable",
    )
    hybrid = await search_notes(pool, "alpha", "hybrid", NO_FILTERS, 10, None, "embedder unavailable")
    assert [hit.path for hit in hybrid.hits] == ["a.md"]
    assert not hybrid.vector_arm_ran and hybrid.vector_arm_skipped_reason == "embedder unavailable"
    assert [name for name, _ in hybrid.timings] == ["keyword"]


# --- hybrid -----------------------------------------------------------------------------------------------------


async def test_hybrid_returns_the_notes_each_arm_alone_misses(pool: asyncpg.Pool) -> None:
    await write(
        pool,
        # Found by the keyword, but third by vector.
        note("zeppelin.md", "The zeppelin hangar plan.", chunks=[(["Plan"], "The zeppelin hangar plan.", 0.6)]),
        # Nearest by vector, no keyword.
        note("airships.md", "Rigid airships history.", chunks=[(["History"], "Rigid airships history.", 0.95)]),
        # Second by vector, no keyword: what the semantic arm alone wrongly puts in the top 2.
        note("balloons.md", "Hot air balloons.", chunks=[([], "Hot air balloons.", 0.9)]),
        note("kites.md", "Kites.", chunks=[([], "Kites.", 0.2)]),
    )
    assert await paths(pool, "zeppelin", "keyword", limit=2) == ["zeppelin.md"]
    assert await paths(pool, "zeppelin", "semantic", limit=2) == ["airships.md", "balloons.md"]
    result = await search(pool, "zeppelin", "hybrid", limit=2)
    assert [hit.path for hit in result.hits] == ["zeppelin.md", "airships.md"]
    assert result.vector_arm_ran and [name for name, _ in result.timings] == ["fuse"]
    zeppelin, airships = result.hits
    assert zeppelin.score == pytest.approx(1 / 61 + 1 / 63)  # keyword rank 1, vector rank 3
    assert "**zeppelin**" in zeppelin.snippet and zeppelin.heading_path == ["Plan"]
    assert airships.snippet == "Rigid airships history." and airships.heading_path == ["History"]


# --- filters ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_folder_and_hierarchical_tag_filters(pool: asyncpg.Pool, mode: SearchMode) -> None:
    await write(
        pool,
        note("Projects/Alpha/plan.md", "budget plan", tags=["project/alpha"], chunks=[([], "budget plan", 0.5)]),
        note("Projects/Beta/plan.md", "budget plan", tags=["Project/Beta"], chunks=[([], "budget plan", 0.6)]),
        note("Areas/home.md", "budget plan", tags=["area", "projects"], chunks=[([], "budget plan", 0.9)]),
        note("ProjectsArchive/old.md", "budget plan", tags=["project"], chunks=[([], "budget plan", 0.8)]),
    )

    async def found(**filters: list[str]) -> list[str]:
        return sorted(await paths(pool, "budget", mode, filters=Filters.parse(**filters)))

    assert await found() == [
        "Areas/home.md",
        "Projects/Alpha/plan.md",
        "Projects/Beta/plan.md",
        "ProjectsArchive/old.md",
    ]
    assert await found(folders=["Projects"]) == ["Projects/Alpha/plan.md", "Projects/Beta/plan.md"]
    assert await found(folders=["Projects/Alpha/"]) == ["Projects/Alpha/plan.md"]
    assert await found(tags=["#project"]) == [
        "Projects/Alpha/plan.md",
        "Projects/Beta/plan.md",
        "ProjectsArchive/old.md",
    ]
    assert await found(tags=["project/beta"]) == ["Projects/Beta/plan.md"]
    assert await found(folders=["Areas"], tags=["project"]) == []


async def test_a_narrow_filter_still_returns_its_notes_when_many_closer_vectors_are_filtered_out(
    pool: asyncpg.Pool, database_url: str
) -> None:
    crowd = [
        note(f"Inbox/{i}.md", "crowd", chunks=[([], f"crowd {i}.{j}", 0.9 + 0.01 * j) for j in range(4)])
        for i in range(150)
    ]
    narrow = [note(f"Narrow/{i}.md", "few", chunks=[([], f"narrow {i}", 0.2 + 0.1 * i)]) for i in range(3)]
    await write(pool, *crowd, *narrow)
    only_narrow = Filters.parse(folders=["Narrow"])
    expected = ["Narrow/2.md", "Narrow/1.md", "Narrow/0.md"]
    assert await paths(pool, "x", "semantic", filters=only_narrow) == expected

    # Make the planner take the HNSW index, check that it does, and that the iterative scan still finds the 3 notes
    # behind 600 closer, filtered-out chunks. Seq and bitmap scans off is not enough: with some statistics (CI once
    # saw it; autovacuum may analyze at any moment) the planner reads the folder's files by primary key, their chunks
    # by file, and sorts. Sorting off too leaves the HNSW index's own ordering as the plan with fewest disabled steps.
    async with pool.acquire() as connection:
        await connection.execute("ANALYZE vault_files; ANALYZE vault_chunks")
    index_only = {
        "enable_seqscan": "off",
        "enable_bitmapscan": "off",
        "enable_indexscan": "on",
        "enable_sort": "off",
    }
    forced = await asyncpg.create_pool(
        database_url, min_size=1, max_size=1, init=register_vector, server_settings=index_only
    )
    try:
        async with forced.acquire() as connection, connection.transaction():
            await connection.execute("SET LOCAL hnsw.ef_search = 100; SET LOCAL hnsw.iterative_scan = relaxed_order")
            sql, params = semantic_statement(QUERY_VECTOR, only_narrow, 5)
            plan = "\n".join(row[0] for row in await connection.fetch(f"EXPLAIN {sql}", *params))
        assert "vault_chunks_embedding_384_idx" in plan
        assert [hit.path for hit in (await search(forced, "x", "semantic", only_narrow, 5)).hits] == expected
        assert (await paths(forced, "crowd", "hybrid", filters=only_narrow)) == expected
    finally:
        await forced.close()


# --- bad input, limits, cancellation ----------------------------------------------------------------------------


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
    assert await paths(pool, "100%_\\", "keyword") == ["a.md"]
    # tsquery operators are not operators to websearch_to_tsquery: this is "postgres vacuum" (and "and" a stopword).
    assert await paths(pool, "postgres & vacuum | !and :* (", "keyword") == ["a.md"]


# Text the arbitrary queries are partly drawn from, so that many of them match and run the snippet code too.
MIXED = 'Prix: 100 % «ça va» — naïve café, C++ & SQL: SELECT "x" FROM t; -- \\n _under_ ümlaut 日本語 ::text $1'


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.one_of(st.text(max_size=1_100), st.text(alphabet=MIXED, max_size=12)),
    mode=st.sampled_from(MODES),
)
@example(query="\x00", mode="keyword")
@example(query="a\x00b", mode="hybrid")
@example(query="\ud800", mode="keyword")
async def test_arbitrary_queries_raise_nothing_but_invalid_input(
    pool: asyncpg.Pool, query: str, mode: SearchMode
) -> None:
    # An upsert of the same note: cheap to repeat for every example.
    await write(pool, note("mixed.md", f"{MIXED}\n{MIXED.upper()}", chunks=[(["Mixed"], MIXED, 0.5)]))
    try:
        result = await search(pool, query, mode)
    except InvalidInput:
        return
    for hit in result.hits:
        assert hit.path == "mixed.md" and isinstance(hit.snippet, str)


async def test_a_statement_past_its_deadline_is_cancelled_on_the_server(pool: asyncpg.Pool, database_url: str) -> None:
    blocker = await asyncpg.connect(database_url)
    try:
        # Hold a lock the search must wait for, so it is still running when its deadline passes.
        async with blocker.transaction():
            await blocker.execute("LOCK TABLE vault_files IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(Unavailable, match=r"did not finish within 0\.5 s"):
                await search_notes(pool, "x", "keyword", NO_FILTERS, 10, None, timeout_seconds=0.5)
            task = asyncio.create_task(search(pool, "x", "hybrid"))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await waiting_searches(blocker) == 0
    finally:
        await blocker.close()


async def waiting_searches(connection: asyncpg.Connection) -> int:
    """Statements of this module still running on the server, after giving cancellations a moment to land."""
    for _ in range(50):
        count = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%websearch_to_tsquery%'"
            " AND pid <> pg_backend_pid()"
        )
        if count == 0:
            return 0
        await asyncio.sleep(0.05)
    return int(count)
