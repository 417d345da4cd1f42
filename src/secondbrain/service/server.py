"""What every gRPC service shares: the server with health, reflection and error mapping, and the run loop.

Each service supplies `ServiceBinding`s (its servicers) and its own `create_server(address, deps)`; this module
builds the `grpc.aio` server around them and runs it until SIGTERM, when in-flight streams get a grace period.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from secondbrain.errors import Unavailable
from secondbrain.service.auth import TokenInterceptor
from secondbrain.service.client_address import LOOPBACK, Network, networks
from secondbrain.service.error_mapping import ErrorMappingInterceptor
from secondbrain.service.handlers import Behaviour, HandlerInterceptor, with_behaviour
from secondbrain.service.health_client import DATABASE_HEADER
from secondbrain.service.limits import MAX_RESPONSE_BYTES, server_request_limit
from secondbrain.service.listener_bounds import grpc_server_options
from secondbrain.service.observe import ObserveInterceptor
from secondbrain.service.reflection import enable_reflection
from secondbrain.service.request_budget import RequestBudgetInterceptor

log = logging.getLogger(__name__)

# Whose x-forwarded-for a server believes unless told (SECONDBRAIN_TRUSTED_PROXIES' default).
LOOPBACK_NETWORKS = networks(LOOPBACK)
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
HEALTH_CHECK = "/grpc.health.v1.Health/Check"

# The database the servers built in this context serve (`Settings.database_identity`), which their health checks
# tell callers: a CLI command uses a running service only when it serves the command's own database. Set by what
# runs a service (`runner.serve`); each service's own `create_server` knows nothing of it. None: not told.
SERVED_DATABASE: ContextVar[str | None] = ContextVar("secondbrain_served_database", default=None)


@dataclass(frozen=True)
class ServiceBinding:
    """One gRPC service to serve: its full proto name, its servicer, and the generated `add_*_to_server`."""

    name: str
    servicer: object
    add_servicer: Callable[[Any, grpc.aio.Server], None]


@dataclass
class RunningServer:
    """A bound (not yet started) server, the port it got, and its health service."""

    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    service_names: list[str] = field(default_factory=list)
    # Work started with the server (a model warming up, say), cancelled when it stops.
    background: list[asyncio.Task[None]] = field(default_factory=list)
    # Background work that must end before the server reports SERVING (it takes calls meanwhile; they wait for
    # what they need): a readiness probe, or `secondbrain up`, then knows the first question will not wait.
    warming: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(self) -> None:
        await self.server.start()
        if self.warming:
            self.background.append(asyncio.create_task(self._serving_once_warm(), name="serving once warm"))
        else:
            await self.set_status(SERVING)

    def warm_up(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run `work` in the background from now; the server reports SERVING once it has ended (however)."""
        task = asyncio.create_task(work, name=name)
        self.background.append(task)
        self.warming.append(task)

    async def _serving_once_warm(self) -> None:
        await asyncio.wait(self.warming)
        await self.set_status(SERVING)

    async def set_status(self, status: health_pb2.HealthCheckResponse.ServingStatus) -> None:
        """Set the overall status ("") and each service's."""
        for name in ["", *self.service_names]:
            await self.health.set(name, status)

    async def stop(self, grace: float) -> None:
        """Report NOT_SERVING, refuse new RPCs, and give in-flight ones `grace` seconds to finish."""
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        for task in self.background:
            task.cancel()
        # Stopped means stopped: no background work of this server goes on touching the database.
        if self.background:
            _, stuck = await asyncio.wait(self.background, timeout=5)
            for task in stuck:
                log.warning("background work did not stop within 5 s", extra={"task": task.get_name()})


async def build_server(
    address: str,
    bindings: Sequence[ServiceBinding],
    api_token: str | None = None,
    *,
    proxies: Sequence[Network] = LOOPBACK_NETWORKS,
    trusted_hops: int = 0,
) -> RunningServer:
    """A server on `address` ("host:port"; port 0 picks a free one) with health, reflection and error mapping;
    with `api_token`, every call but a health check must present it, and a client (the peer, or whom one of
    `proxies` saw: `client_address`) that sends too many wrong ones is refused a while (`token_guesses`)."""
    # Observation is outermost, so refused calls are counted too; then the token check, so a refused call never
    # reaches a handler; then the mapping of errors to statuses.
    health_servicer = health.aio.HealthServicer()
    interceptors: list[grpc.aio.ServerInterceptor] = [ObserveInterceptor()]
    if (database := SERVED_DATABASE.get()) is not None:
        interceptors.append(DatabaseHeaderInterceptor(database))
    if api_token:
        interceptors.append(TokenInterceptor(api_token, health_servicer, proxies=proxies, trusted_hops=trusted_hops))
    server = grpc.aio.server(
        # Then large requests are read a few at a time, within the process's budget (request_budget.py).
        interceptors=[*interceptors, RequestBudgetInterceptor(), ErrorMappingInterceptor()],
        options=[
            # No method of these services takes more: anything bigger is refused before it is whole.
            ("grpc.max_receive_message_length", server_request_limit(binding.name for binding in bindings)),
            ("grpc.max_send_message_length", MAX_RESPONSE_BYTES),
            # With bandwidth probing, gRPC widens each stream's flow-control window to megabytes on a fast link,
            # so a refused call's unread request still arrived in part: 20 unauthenticated 15 MB health checks cost
            # ingest 20 to 54 MB, 10 refused chat calls up to 65 MB; without it, under 1 MB. A request that is read
            # is not slowed: the window opens to the size of the message asked for (15 MB on loopback, 40 ms both ways).
            ("grpc.http2.bdp_probe", 0),
            # Handshake and idle time, streams per connection, no compressed requests (listener_bounds.py).
            *grpc_server_options(),
        ],
    )
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for binding in bindings:
        binding.add_servicer(binding.servicer, server)
    names = [binding.name for binding in bindings]
    enable_reflection(server, [*names, health.SERVICE_NAME])
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as error:
        raise Unavailable(f"cannot listen on {address}: {error}; is another process using the port?") from error
    running = RunningServer(server=server, port=port, health=health_servicer, service_names=names)
    # Until start() says otherwise, a health check reports the service as not ready.
    await running.set_status(NOT_SERVING)
    return running


class DatabaseHeaderInterceptor(HandlerInterceptor):
    """Answers every health check with the database this server serves, in initial metadata (DATABASE_HEADER)."""

    def __init__(self, database: str) -> None:
        self._metadata = ((DATABASE_HEADER, database),)

    def wrap(self, handler: grpc.RpcMethodHandler, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        if details.method != HEALTH_CHECK:
            return handler
        return with_behaviour(handler, unary=self._telling, stream=lambda behaviour: behaviour)

    def _telling(self, behaviour: Behaviour) -> Behaviour:
        async def check(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await context.send_initial_metadata(self._metadata)
            return await behaviour(request, context)

        return check


async def run_until_stopped(
    start: Callable[[], Awaitable[RunningServer]],
    cleanup: Callable[[], Awaitable[None]],
    grace: float,
    service: str,
) -> None:
    """Start a server and serve until SIGTERM or SIGINT, then stop it gracefully and run `cleanup`."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    running = await start()
    try:
        await running.start()
        log.info("serving", extra={"service": service, "port": running.port, "grpc_services": running.service_names})
        await stop.wait()
        log.info("stopping", extra={"grace_seconds": grace})
        await running.stop(grace)
    finally:
        await cleanup()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    log.info("stopped")
