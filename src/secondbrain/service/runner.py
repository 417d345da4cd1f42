"""Running one service as a process: configure logging, open the database, serve until SIGTERM."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from secondbrain.config import Config
from secondbrain.db import Database
from secondbrain.jsonlog import configure_logging
from secondbrain.service.observe import start_metrics_server
from secondbrain.service.server import SERVED_DATABASE, RunningServer, run_until_stopped
from secondbrain.service.tracing import configure_tracing

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServiceDeps:
    """What every service is built from; a service that needs more wraps this in its own deps."""

    config: Config
    db: Database


CreateServer = Callable[[str, ServiceDeps], Awaitable[RunningServer]]


async def serve(
    service: str,
    config: Config,
    create_server: CreateServer,
    port: int | None = None,
    *,
    session_state: bool = True,
) -> None:
    """Serve `service` on the configured host and its port (or `port`) until SIGTERM or SIGINT. `session_state=False`:
    the service leaves nothing in a database session, so its pool skips the reset on release (`Database.open`)."""
    settings = config.settings
    configure_logging(settings.log_level, settings.log_format, service=service)
    configure_tracing(service)
    db = await Database.open(settings, session_state=session_state, name=f"secondbrain-{service}")
    address = f"{settings.host}:{settings.port_for(service) if port is None else port}"
    deps = ServiceDeps(config=config, db=db)
    # Its health checks say which database it serves, so a command configured for another one does not use it.
    SERVED_DATABASE.set(settings.database_identity)
    if settings.token is None:
        log.warning("no SECONDBRAIN_API_TOKEN: listening on loopback only", extra={"address": address})
    grpc_port = settings.port_for(service) if port is None else port
    metrics_port = (
        settings.metrics_port if settings.metrics_port is not None else (grpc_port + 1000 if grpc_port else 0)
    )
    bound = start_metrics_server(settings.metrics_host, metrics_port)
    log.info("metrics", extra={"url": f"http://{settings.metrics_host}:{bound}/metrics"})
    await run_until_stopped(lambda: create_server(address, deps), db.close, settings.shutdown_grace_seconds, service)
