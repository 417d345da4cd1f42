"""Graceful shutdown: a stream in flight when the server is told to stop gets its grace period to finish."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc

from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from secondbrain.service.server import ServiceBinding, build_server


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


async def _serve(servicer: SlowSync) -> tuple:
    binding = ServiceBinding(
        pb.DESCRIPTOR.services_by_name["IngestService"].full_name, servicer, pb_grpc.add_IngestServiceServicer_to_server
    )
    running = await build_server("127.0.0.1:0", [binding])
    await running.start()
    return running, grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")


async def _collect(stub: pb_grpc.IngestServiceStub) -> list[str]:
    return [event.WhichOneof("event") async for event in stub.SyncVault(pb.SyncVaultRequest(), timeout=10)]


async def test_stream_in_flight_finishes_within_grace() -> None:
    servicer = SlowSync()
    running, channel = await _serve(servicer)
    async with channel:
        stream = asyncio.create_task(_collect(pb_grpc.IngestServiceStub(channel)))
        await servicer.streaming.wait()
        await running.stop(grace=5)
        assert await stream == ["started", "file", "file", "file", "done"]


async def test_stream_past_grace_is_cut_off() -> None:
    servicer = SlowSync()
    running, channel = await _serve(servicer)
    async with channel:
        stream = asyncio.create_task(_collect(pb_grpc.IngestServiceStub(channel)))
        await servicer.streaming.wait()
        await running.stop(grace=0.1)
        try:
            events = await stream
        except grpc.aio.AioRpcError as error:
            assert error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
        else:
            raise AssertionError(f"the stream outlived the grace period: {events}")
