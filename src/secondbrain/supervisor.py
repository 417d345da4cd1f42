"""`secondbrain up`: every service as a child process of one supervised tree.

The supervisor starts (or joins) the database first and migrates it, so the children find it ready; then it starts
each service, waits for each to report SERVING, and prints where they are. Ctrl-C (or SIGTERM) stops the children
gracefully; a child that dies stops the whole run with a message saying which one and where its output went.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from dataclasses import dataclass

from secondbrain.config import Config
from secondbrain.db import Database
from secondbrain.errors import Unavailable
from secondbrain.service.health_client import wait_until_serving

SERVICES = ("ingest", "retrieve", "chat")
STARTUP_TIMEOUT_SECONDS = 60.0


@dataclass
class Child:
    name: str
    address: str
    process: asyncio.subprocess.Process


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def _spawn(name: str, config: Config) -> Child:
    settings = config.settings
    port = settings.port_for(name)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "serve", name, env=os.environ.copy(), start_new_session=True
    )
    return Child(name=name, address=f"{settings.host}:{port}", process=process)


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
        for name in SERVICES:
            children.append(await _spawn(name, config))
        for child in children:
            if not await wait_until_serving(child.address, STARTUP_TIMEOUT_SECONDS):
                raise Unavailable(
                    f"the {child.name} service did not become healthy on {child.address}; see its log above"
                )
        _say("secondbrain is up:")
        for child in children:
            _say(f"  {child.name:<9} grpc://{child.address}")
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
        _say(f"secondbrain: the {dead.name} service exited with code {dead.process.returncode}; stopping everything")
        return 1
    finally:
        await _stop(children, settings.shutdown_grace_seconds)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(ValueError):
                loop.remove_signal_handler(sig)
        await db.close()
