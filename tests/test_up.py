"""`secondbrain up` (what `make run` calls): all three services supervised as one process tree."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys

import httpx2
import psutil
import pytest

from secondbrain.service.health_client import check_health

GRPC = ("ingest", "retrieve", "chat")


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


async def _read_until(stream: asyncio.StreamReader, marker: str, seen: list[str]) -> None:
    while line := await asyncio.wait_for(stream.readline(), 90):
        seen.append(line.decode(errors="replace"))
        if marker in seen[-1]:
            return
    raise AssertionError("output ended before " + repr(marker) + ":\n" + "".join(seen))


@pytest.fixture
async def up(service_env: dict[str, str]):
    ports = dict(zip(("ingest", "retrieve", "chat", "shim", "gateway"), _free_ports(5), strict=True))
    env = {**service_env, **{f"SECONDBRAIN_{name.upper()}_PORT": str(port) for name, port in ports.items()}}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "up", env=env, stderr=asyncio.subprocess.PIPE
    )
    seen: list[str] = []
    assert process.stderr is not None
    await _read_until(process.stderr, "Press Ctrl-C to stop", seen)
    yield process, ports, seen
    if process.returncode is None:
        process.kill()
        await process.wait()


async def test_up_serves_everything_and_ctrl_c_stops_it(up) -> None:
    process, ports, seen = up
    output = "".join(seen)
    for name in GRPC:
        assert f"grpc://127.0.0.1:{ports[name]}" in output
        assert await check_health(f"127.0.0.1:{ports[name]}") == "SERVING", name
    gateway = f"http://127.0.0.1:{ports['gateway']}/"
    assert f"envoy     {gateway}" in output and f"Open {gateway} in a browser" in output
    assert "loopback only" in output
    async with httpx2.AsyncClient(base_url=gateway, timeout=10) as client:
        options = await client.get("/api/chat/options")
        assert options.status_code == 200 and options.json()["providers"], "REST through Envoy to chat"
        assert (await client.get(f"http://127.0.0.1:{ports['shim']}/healthz")).status_code == 200
    children = psutil.Process(process.pid).children()
    # Five children, Envoy among them as itself (exec'd), so nothing of it can outlive the run.
    assert len(children) == 5 and any(child.name() == "envoy" for child in children)
    process.send_signal(signal.SIGINT)
    assert await asyncio.wait_for(process.wait(), 60) == 0
    for child in children:
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    for name in GRPC:
        assert await check_health(f"127.0.0.1:{ports[name]}", rpc_timeout=1) == "UNREACHABLE"
    for name in ("shim", "gateway"):
        with pytest.raises(httpx2.ConnectError):
            async with httpx2.AsyncClient(timeout=2) as client:
                await client.get(f"http://127.0.0.1:{ports[name]}/healthz")


async def test_a_dying_child_stops_the_run_and_says_which(up) -> None:
    process, ports, seen = up
    retrieve = next(child for child in psutil.Process(process.pid).children() if "retrieve" in child.cmdline())
    retrieve.kill()
    assert process.stderr is not None
    await _read_until(process.stderr, "stopping everything", seen)
    assert "the retrieve server exited" in seen[-1]
    assert await asyncio.wait_for(process.wait(), 60) == 1
    assert await check_health(f"127.0.0.1:{ports['chat']}", rpc_timeout=1) == "UNREACHABLE"
