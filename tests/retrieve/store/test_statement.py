"""Running a statement (`secondbrain.retrieve.store.statement.fetch`): a vector scan's settings hold for its own
transaction only, so other users of the pooled connection keep the defaults."""

from __future__ import annotations

import time

import asyncpg

from secondbrain.retrieve.store import HNSW_EF_SEARCH, Statement, fetch

SETTINGS = Statement(
    "SELECT current_setting('hnsw.ef_search', true) AS ef_search,"
    " current_setting('hnsw.iterative_scan', true) AS iterative_scan,"
    " current_setting('statement_timeout') AS statement_timeout,"
    " current_setting('transaction_read_only') AS read_only",
    [],
)


async def test_a_vector_scan_sets_hnsw_for_its_own_transaction_only(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as connection:
        [inside] = await fetch(connection, SETTINGS, vector_scan=True, deadline=time.monotonic() + 5)
        [after] = await fetch(connection, SETTINGS, vector_scan=False)
    assert inside["ef_search"] == str(HNSW_EF_SEARCH) and inside["iterative_scan"] == "relaxed_order"
    assert inside["read_only"] == "on" and inside["statement_timeout"] not in ("0", after["statement_timeout"])
    assert after["ef_search"] != str(HNSW_EF_SEARCH) and after["iterative_scan"] != "relaxed_order"
