"""Envoy holds at most its cap of client connections (listener_bounds.py, rendered into the overload manager): one
more is closed as soon as it is accepted, and once some close, a request is served again. Through the real Envoy
binary, capped low, answering its own `/metrics` 404 so that no service is needed; and the cap fits Envoy's file
limit."""

from __future__ import annotations

import asyncio
import contextlib
import resource
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
import yaml

from secondbrain.config import Settings
from secondbrain.gateway.envoy import Envoy
from secondbrain.gateway.envoy_config import GatewayLayout, Upstream, kubernetes_layout, local_layout, render
from secondbrain.service.listener_bounds import ENVOY_MAX_CONNECTIONS, envoy_max_connections

CAP = 20
NOWHERE = Upstream("127.0.0.1", 9)


@pytest.fixture
async def capped(tmp_path: Path) -> AsyncIterator[Envoy]:
    layout = GatewayLayout(
        listen_host="127.0.0.1",
        listen_port=0,
        admin_socket=tmp_path / "admin.sock",
        ingest=NOWHERE,
        retrieve=NOWHERE,
        chat=NOWHERE,
        shim=NOWHERE,
        max_connections=CAP,
    )
    envoy = await Envoy.start(layout, tmp_path)
    try:
        yield envoy
    finally:
        await envoy.stop()


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Whether the server closes the connection within `seconds` (sending nothing first)."""
    try:
        return await asyncio.wait_for(reader.read(1), seconds) == b""
    except TimeoutError:
        return False
    except ConnectionError:
        return True


async def test_a_connection_over_the_cap_is_closed_at_once_and_one_is_served_once_others_close(
    capped: Envoy,
) -> None:
    opened = [await asyncio.open_connection("127.0.0.1", capped.port) for _ in range(CAP)]
    try:
        for reader, _ in opened[-3:]:
            assert not await _closed_within(reader, 0.2), "within the cap, an idle connection is held"
        reader, writer = await asyncio.open_connection("127.0.0.1", capped.port)
        assert await _closed_within(reader, 2.0), "one over the cap is closed as it is accepted"
        writer.close()
        for _, writer in opened[:5]:
            writer.close()
        # Envoy counts a connection out once it has seen it close.
        answered = None
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{capped.port}", timeout=2.0) as client:
            for _ in range(20):
                with contextlib.suppress(httpx2.TransportError):
                    answered = await client.get("/metrics", headers={"host": "localhost"})
                    break
                await asyncio.sleep(0.1)
        assert answered is not None and answered.status_code == 404, "served again (Envoy's own 404 for /metrics)"
    finally:
        for _, writer in opened:
            writer.close()


def test_the_cap_fits_the_file_limit_envoy_inherits() -> None:
    assert envoy_max_connections(20_000) == ENVOY_MAX_CONNECTIONS == 10_000
    assert envoy_max_connections(1_024) == 512
    assert envoy_max_connections(4_096) == 4_096 - 1_024 - 128
    assert envoy_max_connections(1_048_576) == ENVOY_MAX_CONNECTIONS
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert local_layout(Settings()).max_connections == envoy_max_connections(soft)
    config = yaml.safe_load(render(local_layout(Settings())))
    [monitor] = config["overload_manager"]["resource_monitors"]
    assert monitor["name"] == "envoy.resource_monitors.global_downstream_max_connections"
    assert monitor["typed_config"]["max_active_downstream_connections"] == envoy_max_connections(soft)
    kube = yaml.safe_load(render(kubernetes_layout(Settings(api_token="a-token-of-sixteen-chars", host="0.0.0.0"))))
    assert kube["overload_manager"]["resource_monitors"][0]["typed_config"]["max_active_downstream_connections"] == (
        ENVOY_MAX_CONNECTIONS
    )
