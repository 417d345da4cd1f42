"""Graceful shutdown: a stream in flight when the server is told to stop gets its grace period to finish."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest

from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from secondbrain.service.server import RunningServer, ServiceBinding, build_server


class SlowSync(pb_grpc.IngestServiceServicer):
    def __init__(self) -> None:
        self.streaming = asyncio.Event()

    async def SyncVault(
        self, request: pb.SyncVaultRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.SyncVaultResponse]:
        yield pb.SyncVaultResponse(started=pb.SyncStarted(files_seen=3))
        self.streaming.set()
        for index in range(3):
            await asyncio.sleep(0.3)
            yield pb.SyncVaultResponse(file=pb.FileProgress(path=f"{index}.md", outcome=pb.FILE_OUTCOME_ADDED))
        yield pb.SyncVaultResponse(done=pb.SyncDone())


@dataclass
class InFlight:
    servicer: SlowSync
    running: RunningServer
    stream: asyncio.Task[list[str]]


@pytest.fixture
async def in_flight() -> AsyncIterator[InFlight]:
    """A server with one SyncVault stream under way, stopped by the test."""
    servicer = SlowSync()
    name = pb.DESCRIPTOR.services_by_name["IngestService"].full_name
    running = await build_server(
        "127.0.0.1:0", [ServiceBinding(name, servicer, pb_grpc.add_IngestServiceServicer_to_server)]
    )
    await running.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
        stub = pb_grpc.IngestServiceStub(channel)

        async def collect() -> list[str]:
            return [event.WhichOneof("event") async for event in stub.SyncVault(pb.SyncVaultRequest(), timeout=10)]

        stream = asyncio.create_task(collect())
        await servicer.streaming.wait()
        yield InFlight(servicer, running, stream)


async def test_stream_in_flight_finishes_within_grace(in_flight: InFlight) -> None:
    await in_flight.running.stop(grace=5)
    assert await in_flight.stream == ["started", "file", "file", "file", "done"]


async def test_stream_past_grace_is_cut_off(in_flight: InFlight) -> None:
    await in_flight.running.stop(grace=0.1)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await in_flight.stream
    assert raised.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
