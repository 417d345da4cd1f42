"""A gRPC service's /metrics needs no token, so it is this machine's even when the service itself listens on every
address: another machine reaches it only where SECONDBRAIN_METRICS_HOST opens it. "Another machine" is this one's
own non-loopback address (a connection to it does not come over loopback), so the test needs one and skips without."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import sys

import httpx2
import psutil
import pytest

from tests.command import serving_port
from tests.reliability.cluster import free_ports

TOKEN = "metrics-host-test-token-0123456789"


def _outside_address() -> str | None:
    """An IPv4 address of this machine that is not loopback, or None."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not ipaddress.ip_address(address.address).is_loopback:
                return address.address
    return None


OUTSIDE = _outside_address()
pytestmark = pytest.mark.skipif(OUTSIDE is None, reason="this machine has no address but loopback")


def _connects(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=5):
        return True
    return False


@pytest.mark.parametrize("metrics_host", [None, "0.0.0.0"], ids=["default", "opened"])
async def test_metrics_are_this_machines_unless_opened(service_env: dict[str, str], metrics_host: str | None) -> None:
    assert OUTSIDE is not None
    (metrics_port,) = free_ports(1)
    env = {
        **service_env,
        "SECONDBRAIN_HOST": "0.0.0.0",
        "SECONDBRAIN_API_TOKEN": TOKEN,
        "SECONDBRAIN_METRICS_PORT": str(metrics_port),
    }
    if metrics_host is not None:
        env["SECONDBRAIN_METRICS_HOST"] = metrics_host
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "serve", "retrieve", "--port", "0", env=env, stderr=asyncio.subprocess.PIPE
    )
    try:
        grpc_port = await serving_port(process)
        # The service itself is open to the network, as SECONDBRAIN_HOST says (its token guards it).
        assert await asyncio.to_thread(_connects, OUTSIDE, grpc_port)
        async with httpx2.AsyncClient(timeout=10) as client:
            here = await client.get(f"http://127.0.0.1:{metrics_port}/metrics")
        assert here.status_code == 200 and "secondbrain_rpc" in here.text
        reached = await asyncio.to_thread(_connects, OUTSIDE, metrics_port)
        assert reached == (metrics_host == "0.0.0.0")
    finally:
        process.kill()
        await process.wait()
