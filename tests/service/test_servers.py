"""Each service through a real gRPC channel: health per service, reflection, graceful stop."""

from __future__ import annotations

import asyncio
import importlib
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from secondbrain.db import Database
from secondbrain.service.health_client import wait_until_serving
from secondbrain.service.runner import ServiceDeps
from secondbrain.service.server import RunningServer

SERVICES = {
    "ingest": "secondbrain.ingest.v1.IngestService",
    "retrieve": "secondbrain.retrieve.v1.RetrieveService",
    "chat": "secondbrain.chat.v1.ChatService",
}


@dataclass
class Served:
    service: str
    address: str
    channel: grpc.aio.Channel


async def _started(service: str, deps: ServiceDeps) -> RunningServer:
    module = importlib.import_module(f"secondbrain.{service}.server")
    running = await module.create_server("127.0.0.1:0", deps)
    await running.start()
    return running


@pytest.fixture(params=sorted(SERVICES))
async def served(request: pytest.FixtureRequest, config, db: Database) -> AsyncIterator[Served]:
    running = await _started(request.param, ServiceDeps(config=config, db=db))
    assert running.port > 0
    address = f"127.0.0.1:{running.port}"
    assert await wait_until_serving(address, 120), "retrieve says SERVING once its model is loaded"
    channel = grpc.aio.insecure_channel(address)
    try:
        yield Served(request.param, address, channel)
    finally:
        await channel.close()
        await running.stop(grace=1)


async def test_health_reports_serving_for_server_and_service(served: Served) -> None:
    stub = health_pb2_grpc.HealthStub(served.channel)
    for name in ("", SERVICES[served.service]):
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING, name
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await stub.Check(health_pb2.HealthCheckRequest(service="secondbrain.nope.v1.Nope"), timeout=5)
    assert error.value.code() == grpc.StatusCode.NOT_FOUND


def _reflect(address: str, service: str) -> tuple[set[str], str]:
    with grpc.insecure_channel(address) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        return set(database.get_services()), database.FindFileContainingSymbol(service).package


async def test_reflection_describes_the_service(served: Served) -> None:
    # The reflection client is synchronous: run it off the event loop that serves it.
    names, package = await asyncio.to_thread(_reflect, served.address, SERVICES[served.service])
    assert SERVICES[served.service] in names
    assert "grpc.health.v1.Health" in names
    assert package == SERVICES[served.service].rsplit(".", 1)[0]


BUF = Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "buf"


@pytest.mark.parametrize("protocol", ["grpc-v1", "grpc-v1alpha"])
async def test_buf_curl_lists_and_describes_by_either_reflection_protocol(served: Served, protocol: str) -> None:
    """buf curl (as grpcurl) asks reflection v1 first; v1alpha serves older tools. Both list the services and
    describe a method well enough to call it by name, with no schema at hand."""
    base = [str(BUF), "curl", "--protocol", "grpc", "--http2-prior-knowledge", "--reflect-protocol", protocol]
    listed = await asyncio.to_thread(
        subprocess.run, [*base, "--list-services", f"http://{served.address}"], capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    assert {SERVICES[served.service], "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection"} <= set(listed.stdout.split())  # fmt: skip
    url = f"http://{served.address}/grpc.health.v1.Health/Check"
    called = await asyncio.to_thread(subprocess.run, [*base, url], capture_output=True, text=True)
    assert called.returncode == 0 and '"status": "SERVING"' in called.stdout, called.stderr


async def test_stop_reports_not_serving_before_closing(config, db: Database) -> None:
    running = await _started("retrieve", ServiceDeps(config=config, db=db))
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        # What stop() does first: a load balancer watching health stops sending new work.
        await running.health.enter_graceful_shutdown()
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=SERVICES["retrieve"]), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
    await running.stop(grace=1)


@pytest.mark.parametrize("service", sorted(SERVICES))
async def test_a_server_for_one_command_does_no_background_work(service: str, config, db: Database) -> None:
    """No queue worker, periodic sync, abandoned-answer sweep or model warm-up: a CLI command's own server does
    what its calls need (a sync works its own queue), and nothing is left behind when the command ends."""
    module = importlib.import_module(f"secondbrain.{service}.server")
    running = await module.create_server("127.0.0.1:0", ServiceDeps(config=config, db=db), one_command=True)
    await running.start()
    try:
        # Chat closes the channel to retrieve it opened, when it stops: cleanup, not work of its own.
        assert {task.get_coro().__name__ for task in running.background} <= {"_close_when_stopped"}
    finally:
        await running.stop(grace=1)


async def test_an_ingest_service_of_its_own_helps_with_every_sync(config, db: Database) -> None:
    running = await _started("ingest", ServiceDeps(config=config, db=db))
    try:
        assert "run_queue_worker" in {task.get_coro().__name__ for task in running.background}
    finally:
        await running.stop(grace=1)
