"""Asking a running service whether it is serving, over the standard gRPC health protocol, and which database it
serves."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

# The initial-metadata header of a health check's answer that names the database the server serves (a hash:
# `Settings.database_identity`).
DATABASE_HEADER = "x-secondbrain-database"


@dataclass(frozen=True)
class Health:
    """What a health check learnt: the status name, and the database the server says it serves (None when it does
    not say: a server older than the header, or one not given its database)."""

    status: str
    database: str | None = None


async def health_of(address: str, service: str = "", rpc_timeout: float = 3.0) -> Health:
    """The health `address` reports for `service` ("" for the server).

    A server that cannot be reached reports "UNREACHABLE"; one that does not know `service`, "UNKNOWN_SERVICE".
    """
    async with grpc.aio.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        call = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=rpc_timeout)
        try:
            reply = await call
            metadata = await call.initial_metadata()
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND:
                return Health("UNKNOWN_SERVICE")
            return Health("UNREACHABLE")
    database = dict(metadata or ()).get(DATABASE_HEADER)
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    return Health(status, database if isinstance(database, str) else None)


async def check_health(address: str, service: str = "", rpc_timeout: float = 3.0) -> str:
    """The status name ("SERVING", "NOT_SERVING", ...) that `address` reports for `service` ("" for the server).

    A server that cannot be reached reports "UNREACHABLE"; one that does not know `service`, "UNKNOWN_SERVICE".
    """
    return (await health_of(address, service, rpc_timeout)).status


async def wait_until_serving(address: str, within_seconds: float) -> bool:
    """Poll until `address` reports SERVING; False when `within_seconds` pass first."""
    deadline = time.monotonic() + within_seconds
    while time.monotonic() < deadline:
        if await check_health(address, rpc_timeout=1.0) == "SERVING":
            return True
        await asyncio.sleep(0.2)
    return False
