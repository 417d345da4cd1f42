"""Each gRPC port bounds what a connection may hold before it calls (issue 47, H2): one that never finishes its
handshake is closed within GRPC_HANDSHAKE_TIMEOUT_MS, one that only sent the HTTP/2 preface within
GRPC_IDLE_CONNECTION_MS, and calls go on being answered meanwhile. The server is `build_server`'s, which every
service's `create_server` uses, on port 0."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from secondbrain.service.listener_bounds import GRPC_HANDSHAKE_TIMEOUT_MS, GRPC_IDLE_CONNECTION_MS
from secondbrain.service.server import RunningServer, build_server

pytestmark = pytest.mark.timeout(120)

# The client's connection preface and an empty SETTINGS frame: a connection ready for calls, that makes none.
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


@pytest.fixture
async def server() -> AsyncIterator[RunningServer]:
    running = await build_server("127.0.0.1:0", [])
    await running.start()
    try:
        yield running
    finally:
        await running.stop(grace=0)


async def _closed_after(reader: asyncio.StreamReader, started: float) -> float:
    with contextlib.suppress(ConnectionError):
        while await reader.read(4096):
            pass
    return time.monotonic() - started


async def _still_answers(port: int) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


@pytest.mark.parametrize(
    ("sends", "bound_ms"),
    [(b"", GRPC_HANDSHAKE_TIMEOUT_MS), (PREFACE, GRPC_IDLE_CONNECTION_MS)],
    ids=["nothing", "only the preface"],
)
async def test_connections_that_make_no_call_are_closed_within_the_bound(
    server: RunningServer, sends: bytes, bound_ms: int
) -> None:
    started = time.monotonic()
    opened = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(200)]
    for _, writer in opened:
        writer.write(sends)
    await _still_answers(server.port)
    bound = bound_ms / 1000
    closed = await asyncio.wait_for(asyncio.gather(*(_closed_after(r, started) for r, _ in opened)), bound + 30)
    for _, writer in opened:
        writer.close()
    # gRPC checks idleness on a timer of its own, so the close may come up to a few seconds after the bound.
    assert max(closed) < bound + 5, f"the last was closed after {max(closed):.1f} s (bound {bound:g} s)"
    await _still_answers(server.port)
