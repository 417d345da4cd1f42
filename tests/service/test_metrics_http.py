"""A service's /metrics server is bounded (issue 47, friction 6): silent clients are closed after
METRICS_CLIENT_TIMEOUT_SECONDS, at most METRICS_MAX_CLIENTS threads serve at once, and a scrape after them is
answered. prometheus_client's own server gave each client a thread with no timeout: 300 slow clients, 316 threads."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import httpx2

from secondbrain.service.listener_bounds import METRICS_CLIENT_TIMEOUT_SECONDS, METRICS_MAX_CLIENTS
from secondbrain.service.observe import start_metrics_server


async def _closed_after(reader: asyncio.StreamReader, started: float) -> float:
    with contextlib.suppress(ConnectionError):
        while await reader.read(4096):
            pass
    return time.monotonic() - started


async def test_slow_clients_cost_a_bounded_number_of_threads_and_are_closed_in_time() -> None:
    port = start_metrics_server("127.0.0.1", 0)
    threads_before = threading.active_count()
    started = time.monotonic()
    opened = [await asyncio.open_connection("127.0.0.1", port) for _ in range(200)]
    for _, writer in opened:
        writer.write(b"GET /metrics HTTP/1.1\r\n")
    await asyncio.sleep(1)
    assert threading.active_count() <= threads_before + METRICS_MAX_CLIENTS
    closed = await asyncio.wait_for(
        asyncio.gather(*(_closed_after(reader, started) for reader, _ in opened)), METRICS_CLIENT_TIMEOUT_SECONDS + 10
    )
    for _, writer in opened:
        writer.close()
    assert max(closed) < METRICS_CLIENT_TIMEOUT_SECONDS + 3, f"the last was closed after {max(closed):.1f} s"
    async with httpx2.AsyncClient(timeout=5) as client:
        scrape = await client.get(f"http://127.0.0.1:{port}/metrics")
    assert scrape.status_code == 200 and "secondbrain_rpc" in scrape.text
