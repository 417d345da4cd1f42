"""Asking a running service whether it is serving, over the standard gRPC health protocol."""

from __future__ import annotations

import asyncio
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


async def check_health(address: str, service: str = "", rpc_timeout: float = 3.0) -> str:
    """The status name ("SERVING", "NOT_SERVING", ...) that `address` reports for `service` ("" for the server).

    A server that cannot be reached reports "UNREACHABLE"; one that does not know `service`, "UNKNOWN_SERVICE".
    """
    async with grpc.aio.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=rpc_timeout)
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND:
                return "UNKNOWN_SERVICE"
            return "UNREACHABLE"
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


async def wait_until_serving(address: str, within_seconds: float) -> bool:
    """Poll until `address` reports SERVING; False when `within_seconds` pass first."""
    deadline = time.monotonic() + within_seconds
    while time.monotonic() < deadline:
        if await check_health(address, rpc_timeout=1.0) == "SERVING":
            return True
        await asyncio.sleep(0.2)
    return False
