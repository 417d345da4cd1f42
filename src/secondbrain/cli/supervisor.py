"""`secondbrain up`: every server as a child process of one supervised tree.

The supervisor starts (or joins) the database first and migrates it, so the children find it ready; then it starts
the three gRPC services, the REST shim and Envoy, waits for each to be ready (the gRPC health check; the shim's
/healthz; the same through Envoy, which proves the whole browser path), and prints where they are. Ctrl-C (or
SIGTERM) stops the children gracefully; a child that dies stops the whole run with a message saying which one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass

import httpx2

from secondbrain.config import Config, Settings
from secondbrain.db import Database
from secondbrain.errors import Unavailable
from secondbrain.service.health_client import check_health

GRPC_SERVICES = ("ingest", "retrieve", "chat")
STARTUP_TIMEOUT_SECONDS = 60.0


@dataclass
class Child:
    name: str
    address: str
    process: asyncio.subprocess.Process

    @property
    def url(self) -> str:
        return f"grpc://{self.address}" if self.name in GRPC_SERVICES else f"http://{self.address}/"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _address(name: str, settings: Settings) -> str:
    port = settings.port_for("gateway" if name == "envoy" else name)
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    return f"{host}:{port}"


async def _spawn(name: str, config: Config) -> Child:
    env = os.environ.copy()
    if config.settings.vault is not None:
        # Chat reads the vault's personas and settings, so every child sees the vault `up` was given.
        env["SECONDBRAIN_VAULT"] = str(config.settings.vault.resolve())
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "serve", name, env=env, start_new_session=True,
        preexec_fn=_stop_with_parent,
    )  # fmt: skip
    return Child(name=name, address=_address(name, config.settings), process=process)


def _stop_with_parent() -> None:
    """In the child, before it runs: ask Linux for SIGTERM when the supervisor dies, however it dies. A killed
    `up` can run no cleanup; without this its children (each in a session of its own, so a terminal's Ctrl-C
    reaches only the supervisor) would go on holding the ports and the embedded PostgreSQL."""
    if sys.platform != "linux":
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


async def _is_ready(child: Child) -> bool:
    if child.name in GRPC_SERVICES:
        return await check_health(child.address, rpc_timeout=1.0) == "SERVING"
    # Through Envoy, /healthz reaches the shim: the whole HTTP path answers.
    try:
        async with httpx2.AsyncClient(timeout=1.0) as client:
            return (await client.get(f"http://{child.address}/healthz")).status_code == 200
    except httpx2.HTTPError:
        return False


async def _wait_until_ready(child: Child) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if child.process.returncode is not None:
            raise Unavailable(f"the {child.name} server exited with code {child.process.returncode}; see its log above")
        if await _is_ready(child):
            return
        await asyncio.sleep(0.2)
    raise Unavailable(f"the {child.name} server did not become ready on {child.address}; see its log above")


async def _ingest(config: Config, ingest_address: str) -> None:
    """Sync the vault through the running ingest service; only what changed since the last run is processed. A
    failed sync is reported, and the system keeps serving what the index already holds."""
    from secondbrain.errors import SecondbrainError
    from secondbrain.ingest.commands import run_ingest

    vault = config.settings.vault
    assert vault is not None
    _say(f"secondbrain: indexing {vault.resolve()}")
    try:
        await run_ingest(config, vault.resolve(), force=False, watch=False, address=ingest_address, as_json=False)
    except SecondbrainError as error:
        _say(f"secondbrain: the vault could not be indexed: {error}")


async def _stop(children: list[Child], grace: float) -> None:
    for child in children:
        if child.process.returncode is None:
            child.process.send_signal(signal.SIGTERM)
    for child in children:
        try:
            await asyncio.wait_for(child.process.wait(), grace + 5)
        except TimeoutError:
            child.process.kill()
            await child.process.wait()


async def run(config: Config) -> int:
    """Run every service until interrupted; the exit code says how it ended."""
    settings = config.settings
    _say("secondbrain: preparing the database" + ("" if settings.database_url else f" in {settings.data_dir}"))
    # Holding the database open here keeps an embedded server alive for the whole run.
    db = await Database.open(settings)
    children: list[Child] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        for name in GRPC_SERVICES:
            children.append(await _spawn(name, config))
        for child in children:
            await _wait_until_ready(child)
        # The gateway comes after what it routes to, the shim before Envoy.
        for name in ("shim", "envoy"):
            children.append(await _spawn(name, config))
            await _wait_until_ready(children[-1])
        _say("secondbrain is up:")
        for child in children:
            _say(f"  {child.name:<9} {child.url}")
        gateway = children[-1]
        _say(f"Open {gateway.url} in a browser; the REST API is described at {gateway.url}api/openapi.json")
        if settings.token is None:
            _say("No SECONDBRAIN_API_TOKEN is set, so everything listens on loopback only.")
        if settings.vault is not None:
            await _ingest(config, children[0].address)
        _say("Press Ctrl-C to stop.")
        waits = {asyncio.ensure_future(child.process.wait()): child for child in children}
        stopped = asyncio.ensure_future(stop.wait())
        done, _ = await asyncio.wait([stopped, *waits], return_when=asyncio.FIRST_COMPLETED)
        for task in [stopped, *waits]:
            if task not in done:
                task.cancel()
        if stopped in done:
            _say("secondbrain: stopping")
            return 0
        dead = next(waits[task] for task in done if task in waits)
        _say(f"secondbrain: the {dead.name} server exited with code {dead.process.returncode}; stopping everything")
        return 1
    finally:
        await _stop(children, settings.shutdown_grace_seconds)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(ValueError):
                loop.remove_signal_handler(sig)
        await db.close()
