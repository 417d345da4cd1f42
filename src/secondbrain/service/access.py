"""How a CLI command reaches a service: over gRPC when the service answers, else in this process.

Either way the command calls the same methods with the same proto messages: a stub's, or the servicer's itself
(its handlers do not use the gRPC context). So `secondbrain ingest ~/notes` works with nothing started, and the same
command talks to a running stack without a flag.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from rich.console import Console

from secondbrain.config import Config
from secondbrain.db import Database
from secondbrain.errors import InvalidInput
from secondbrain.service.auth import open_channel
from secondbrain.service.health_client import check_health


class InProcess:
    """A servicer called like a stub: `await svc.Method(request)` or `async for event in svc.Method(request)`."""

    def __init__(self, servicer: object) -> None:
        self._servicer = servicer

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._servicer, name)

        def call(request: object, timeout: float | None = None) -> Any:
            return method(request, None)

        return call


@contextlib.asynccontextmanager
async def streaming(call: Any) -> AsyncIterator[Any]:
    """Iterate a server-streaming call, and end it however the loop ends (Ctrl-C included): a gRPC call is
    cancelled, an in-process async generator closed, so its `finally` blocks (locks, connections) run now."""
    try:
        yield call
    finally:
        if hasattr(call, "aclose"):
            await call.aclose()
        elif hasattr(call, "cancel"):
            call.cancel()


@contextlib.asynccontextmanager
async def connect(
    config: Config,
    service: str,
    full_name: str,
    address: str | None,
    stub_class: Callable[[grpc.aio.Channel], Any],
    make_servicer: Callable[[Config, Database], object],
    console: Console,
) -> AsyncIterator[Any]:
    """A stub of the running `service`, or its servicer built in this process on the configured database."""
    settings = config.settings
    target = address or settings.address_of(service)
    if await check_health(target, full_name, rpc_timeout=1.0) == "SERVING":
        async with open_channel(target, settings.token) as channel:
            yield stub_class(channel)
        return
    if address:
        raise InvalidInput(f"no {service} service answers at {address}")
    console.print(f"[dim]No {service} service at {target}; working in this process.[/dim]")
    db = await Database.open(settings)
    try:
        yield InProcess(make_servicer(config, db))
    finally:
        await db.close()
