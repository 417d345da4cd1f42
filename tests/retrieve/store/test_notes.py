"""The note search statements on a real PostgreSQL with pgvector: what each arm matches and how it ranks, the
HNSW index under a narrow filter, and a statement past its deadline (`secondbrain.retrieve.store.notes`).

They run through `search_notes`, whose hits say what the rows were; notes are written the way ingest writes them.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from pgvector.asyncpg import register_vector

from secondbrain.errors import Unavailable
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.note_search import search_notes
from secondbrain.retrieve.store import Statement, fetch, vector_notes_statement
from tests.retrieve.notes import NO_FILTERS, QUERY_VECTOR, note, paths, search, write

# --- lexical ----------------------------------------------------------------------------------------------------


async def test_lexical_requires_every_word_and_honours_phrases_exclusions_and_or(pool: asyncpg.Pool) -> None:
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
    # The paragraph with its wrap joined, "usters" marked inside "clusters".
    assert hit.snippet == "We moved the clusters. Nothing else happened." and hit.highlights == [(15, 21)]
    assert hit.heading_path == []


async def test_title_match_ranks_above_body_only_matches(pool: asyncpg.Pool) -> None:
    await write(
        pool,
        note("bread.md", "Sourdough sourdough sourdough: the sourdough starter needs feeding.", title="Bread"),
        note("baking/sourdough.md", "A recipe for the weekend.", title="Sourdough"),
        note("Sourdough-log/week1.md", "Fed it twice.", title="Week 1"),
    )
    assert await paths(pool, "sourdough") == ["baking/sourdough.md", "Sourdough-log/week1.md", "bread.md"]


# --- vector -----------------------------------------------------------------------------------------------------


async def test_vector_collapses_chunks_to_notes_and_ranks_the_planted_note_first(pool: asyncpg.Pool) -> None:
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
    result = await search(pool, "anything", "vector")
    assert result.vector_arm_ran and result.vector_arm_skipped_reason == ""
    assert [hit.path for hit in result.hits] == ["planted.md", "second.md", "third.md", "unrelated.md"]
    best = result.hits[0]
    assert best.heading_path == ["Design", "Storage"]
    assert best.snippet == "Vectors live in one table."  # the best chunk, without its "Title > Heading" prefix
    assert best.score == pytest.approx(0.95, abs=1e-3)
    assert [name for name, _ in result.timings] == ["semantic"]
    assert [hit.path for hit in (await search(pool, "anything", "vector", limit=2)).hits] == [
        "planted.md",
        "second.md",
    ]


async def test_a_narrow_filter_still_returns_its_notes_when_many_closer_vectors_are_filtered_out(
    pool: asyncpg.Pool, database_url: str
) -> None:
    crowd = [
        note(f"Inbox/{i}.md", "crowd", chunks=[([], f"crowd {i}.{j}", 0.9 + 0.01 * j) for j in range(4)])
        for i in range(150)
    ]
    # Above the search box's similarity floor, so hybrid lists them too (none holds the word "crowd").
    narrow = [note(f"Narrow/{i}.md", "few", chunks=[([], f"narrow {i}", 0.5 + 0.1 * i)]) for i in range(3)]
    await write(pool, *crowd, *narrow)
    only_narrow = Filters.parse(folders=["Narrow"])
    expected = ["Narrow/2.md", "Narrow/1.md", "Narrow/0.md"]
    assert await paths(pool, "x", "vector", filters=only_narrow) == expected

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
        async with forced.acquire() as connection:
            sql, params = vector_notes_statement(QUERY_VECTOR, only_narrow, 5)
            explained = await fetch(connection, Statement(f"EXPLAIN {sql}", params), vector_scan=True)
            plan = "\n".join(row[0] for row in explained)
        assert "vault_chunks_embedding_384_idx" in plan
        assert [hit.path for hit in (await search(forced, "x", "vector", only_narrow, 5)).hits] == expected
        assert (await paths(forced, "crowd", "hybrid", filters=only_narrow)) == expected
    finally:
        await forced.close()


# --- hybrid -----------------------------------------------------------------------------------------------------


async def test_hybrid_returns_the_notes_each_arm_alone_misses(pool: asyncpg.Pool) -> None:
    await write(
        pool,
        # Found by the lexical arm, but third by vector.
        note("zeppelin.md", "The zeppelin hangar plan.", chunks=[(["Plan"], "The zeppelin hangar plan.", 0.6)]),
        # Nearest by vector, no keyword.
        note("airships.md", "Rigid airships history.", chunks=[(["History"], "Rigid airships history.", 0.95)]),
        # Second by vector, no keyword: what the vector arm alone wrongly puts in the top 2.
        note("balloons.md", "Hot air balloons.", chunks=[([], "Hot air balloons.", 0.9)]),
        note("kites.md", "Kites.", chunks=[([], "Kites.", 0.2)]),
    )
    assert await paths(pool, "zeppelin", "lexical", limit=2) == ["zeppelin.md"]
    assert await paths(pool, "zeppelin", "vector", limit=2) == ["airships.md", "balloons.md"]
    result = await search(pool, "zeppelin", "hybrid", limit=2)
    assert [hit.path for hit in result.hits] == ["zeppelin.md", "airships.md"]
    assert result.vector_arm_ran and [name for name, _ in result.timings] == ["fuse"]
    zeppelin, airships = result.hits
    assert zeppelin.score == pytest.approx(1 / 61 + 1 / 63)  # lexical rank 1, vector rank 3
    assert [zeppelin.snippet[a:b] for a, b in zeppelin.highlights] == ["zeppelin"]
    assert zeppelin.heading_path == ["Plan"]
    assert airships.snippet == "Rigid airships history." and airships.heading_path == ["History"]


# --- deadline ---------------------------------------------------------------------------------------------------


async def test_a_statement_past_its_deadline_is_cancelled_on_the_server(pool: asyncpg.Pool, database_url: str) -> None:
    blocker = await asyncpg.connect(database_url)
    try:
        # Hold a lock the search must wait for, so it is still running when its deadline passes.
        async with blocker.transaction():
            await blocker.execute("LOCK TABLE vault_files IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(Unavailable, match=r"did not finish within 0\.5 s"):
                await search_notes(pool, "x", "lexical", NO_FILTERS, 10, None, timeout_seconds=0.5)
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
