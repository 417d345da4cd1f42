"""The budget of large requests read at once (request_budget.py), on its own: calls beyond it wait, none fails."""

from __future__ import annotations

import asyncio

from secondbrain.service.limits import REQUEST_BYTES_IN_FLIGHT, metered
from secondbrain.service.request_budget import ByteBudget


async def test_calls_beyond_the_budget_wait_and_each_gets_its_turn() -> None:
    budget = ByteBudget(64)
    most = 0

    async def call(size: int) -> None:
        nonlocal most
        await budget.reserve(size)
        most = max(most, budget.used)
        await asyncio.sleep(0.01)
        await budget.release(size)

    await asyncio.gather(*(call(16) for _ in range(20)), call(100))
    assert most <= 100 and budget.used == 0, "at most the budget, or one call larger than it alone"


async def test_a_call_cancelled_while_it_waits_takes_nothing() -> None:
    budget = ByteBudget(16)
    await budget.reserve(16)
    waiting = asyncio.create_task(budget.reserve(16))
    await asyncio.sleep(0.01)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    await budget.release(16)
    assert budget.used == 0
    await asyncio.wait_for(budget.reserve(16), 5)


def test_only_the_methods_taking_megabytes_are_metered() -> None:
    assert metered("/secondbrain.ingest.v1.IngestService/UpsertNote")
    assert not metered("/secondbrain.retrieve.v1.RetrieveService/Retrieve")
    assert not metered("/secondbrain.chat.v1.ChatService/SendMessage")
    assert REQUEST_BYTES_IN_FLIGHT >= 4 * 16 * 1024 * 1024
