"""How a CLI command reaches a service: the running one when it answers, else a real server started in this process.

Either way the command holds a stub on a gRPC channel and makes the same calls: a server of its own listens on a
free loopback port and serves them through every interceptor a running service has (the token check, the request
limits, error mapping, observation). So `secondbrain ingest ~/notes` works with nothing started, behaves as it would
against a running stack, and the same command talks to a running stack without a flag.

A running service is used only when it serves the command's own database (its health check says which): a
command configured for another vault's data works in its own process rather than on someone else's index.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import grpc
from rich.console import Console

from secondbrain.config import Config, Settings
from secondbrain.db import Database
from secondbrain.errors import InvalidInput
from secondbrain.service.auth import open_channel
from secondbrain.service.health_client import Health, health_of
from secondbrain.service.observe import RPC_IN_FLIGHT
from secondbrain.service.registry import SERVICES
from secondbrain.service.runner import ServiceDeps

Stub = TypeVar("Stub")

LOOPBACK = "127.0.0.1"
# When a command ends, calls it left in flight (Ctrl-C cancels them) get this long to finish their cleanup before
# the command's own servers stop.
STOP_GRACE_SECONDS = 5.0
# How long a service that answers but is still starting (loading its model: seconds the first time, when the ONNX
# export is made) is waited for before the command works in its own process instead.
STARTING_SECONDS = 30.0


@contextlib.asynccontextmanager
async def streaming(call: Any) -> AsyncIterator[Any]:
    """Iterate a server-streaming call, and cancel it however the loop ends (Ctrl-C included), so the server stops
    its work and runs its cleanup (locks, connections) now."""
    try:
        yield call
    finally:
        call.cancel()


async def _running(service: str, address: str) -> Health | None:
    """The health of the `service` serving at `address`; None when none is serving there. One still starting
    (NOT_SERVING while its model loads) is waited for, up to STARTING_SECONDS."""
    deadline = time.monotonic() + STARTING_SECONDS
    while True:
        health = await health_of(address, SERVICES[service].grpc_name, rpc_timeout=1.0)
        if health.status != "NOT_SERVING" or time.monotonic() > deadline:
            return health if health.status == "SERVING" else None
        await asyncio.sleep(0.2)


def _serves_ours(health: Health, settings: Settings) -> bool:
    """Whether the server serves the database `settings` names. One that does not say (older than the header)
    is taken to, as before the header."""
    return health.database is None or health.database == settings.database_identity


@contextlib.asynccontextmanager
async def connect(
    config: Config,
    service: str,
    address: str | None,
    stub_class: Callable[[grpc.aio.Channel], Stub],
    console: Console,
    *,
    doing: str = "working",
) -> AsyncIterator[Stub]:
    """A stub of the running `service` (at `address`, else its configured one), or, when none answers there or the
    one there serves another database, of one started in this process; `console` says which ("No ingest service at
    ...; working in this process."). With `address` given, only the service there will do, whatever its database:
    the caller chose it (a stack elsewhere, reached through a tunnel, has a database URL of its own)."""
    settings = config.settings
    target = address or settings.address_of(service)
    running = await _running(service, target)
    if running is not None and (address or _serves_ours(running, settings)):
        async with open_channel(target, settings.token) as channel:
            yield stub_class(channel)
        return
    if address:
        raise InvalidInput(f"no {service} service answers at {address}")
    # One line however narrow the console (a pipe is 80 columns): a terminal wraps it, a log keeps it whole.
    if running is None:
        console.print(f"[dim]No {service} service at {target}; {doing} in this process.[/dim]", soft_wrap=True)
    else:
        console.print(
            f"[dim]The running {service} service at {target} serves another database; {doing} in this process.[/dim]",
            soft_wrap=True,
        )
    async with in_process(config, service, stub_class) as stub:
        yield stub


@contextlib.asynccontextmanager
async def in_process(
    config: Config, service: str, stub_class: Callable[[grpc.aio.Channel], Stub]
) -> AsyncIterator[Stub]:
    """A stub of `service` served by this process on a free loopback port, over the database `config` names,
    whatever may be running elsewhere; the services it calls are the running ones, or are started here too. Each
    server does what calls need and none of the background work of a service's own process (`one_command`)."""
    db = await Database.open(config.settings)
    try:
        async with contextlib.AsyncExitStack() as servers:
            address = await _start(config, db, service, servers)
            servers.push_async_callback(_calls_ended, STOP_GRACE_SECONDS)
            async with open_channel(address, config.settings.token) as channel:
                yield stub_class(channel)
    finally:
        await db.close()


async def _calls_ended(within: float) -> None:
    """Wait, up to `within` seconds, until no call is in flight on this process's servers. A call the command
    cancelled (Ctrl-C) ends on the server only when its cleanup has run, such as a sync recording that it was
    cancelled; stopping a server does not wait for that, and the database must not close under it."""
    deadline = time.monotonic() + within
    while _in_flight() and time.monotonic() < deadline:  # noqa: ASYNC110 - a metric: there is no event to wait on
        await asyncio.sleep(0.05)


def _in_flight() -> float:
    """Calls being served in this process now, as the servers' observation counts them."""
    return sum(sample.value for metric in RPC_IN_FLIGHT.collect() for sample in metric.samples)


async def _start(config: Config, db: Database, service: str, servers: contextlib.AsyncExitStack) -> str:
    """Start `service` here (after the services it calls that do not answer), each stopped when `servers` closes;
    returns its address."""
    settings = config.settings
    called = {}
    for name in SERVICES[service].calls:
        target = settings.address_of(name)
        # A running one of another database would answer from that database's notes: started here instead.
        usable = (health := await _running(name, target)) is not None and _serves_ours(health, settings)
        called[f"{name}_address"] = target if usable else await _start(config, db, name, servers)
    if called:
        config = dataclasses.replace(config, settings=settings.model_copy(update=called))
    running = await SERVICES[service].server().create_server(f"{LOOPBACK}:0", ServiceDeps(config, db), one_command=True)
    await running.start()
    servers.push_async_callback(running.stop, STOP_GRACE_SECONDS)
    return f"{LOOPBACK}:{running.port}"
