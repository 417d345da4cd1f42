"""Running the system: `serve` (one server), `up` (all of them, supervised), `gateway-config`, `health`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from secondbrain.cli.app import VaultOption, config_with, errors_as_messages, run


class Service(StrEnum):
    ingest = "ingest"
    retrieve = "retrieve"
    chat = "chat"


class Server(StrEnum):
    ingest = "ingest"
    retrieve = "retrieve"
    chat = "chat"
    shim = "shim"
    envoy = "envoy"


class LogFormat(StrEnum):
    auto = "auto"
    json = "json"
    text = "text"


LogFormatOption = Annotated[
    LogFormat | None,
    typer.Option(
        "--log-format",
        help="auto: short text lines at a terminal, else one JSON object a line; default SECONDBRAIN_LOG_FORMAT.",
        show_default=False,
    ),
]


def serve(
    service: Annotated[Server, typer.Argument(help="Which server to run.")],
    port: Annotated[
        int | None,
        typer.Option(
            help="Port to listen on (0: any free port); default from `SECONDBRAIN_<SERVICE>_PORT` "
            "(SECONDBRAIN_GATEWAY_PORT for envoy)."
        ),
    ] = None,
    host: Annotated[str | None, typer.Option(help="Address to bind; default SECONDBRAIN_HOST (127.0.0.1).")] = None,
    vault: VaultOption = None,
    log_format: LogFormatOption = None,
) -> None:
    """Run one server until SIGTERM or Ctrl-C.

    ingest, retrieve and chat are gRPC services: each uses DATABASE_URL, or starts (or joins) the embedded
    PostgreSQL when that is unset, applies pending migrations, and answers the gRPC health check once ready.
    shim is the REST + server-sent events API; envoy is the gateway a browser talks to (grpc-web, /api/ and the
    web UI), in front of the others at their configured addresses.
    """
    from secondbrain.cli.ports import ports_of, refuse_busy

    config = config_with(host=host, vault=vault, log_format=log_format)
    with errors_as_messages():
        # Before the database is opened or started: a taken port is said at once, naming it, not as a bind error's
        # traceback (a metrics port) or as a gRPC server sharing the port with the one already there.
        refuse_busy(ports_of(config.settings, service.value, port), f"the {service.value} server was not started")
    if service is Server.envoy:
        from secondbrain.gateway.server import main_envoy

        with errors_as_messages():
            main_envoy(config, port)
        return

    async def go() -> None:
        if service is Server.shim:
            from secondbrain.gateway.server import main_shim

            await main_shim(config, port)
            return
        from secondbrain.service.registry import SERVICES

        await SERVICES[service.value].server().main(config, port)

    if service is Server.shim:
        from secondbrain.gateway.server import shim_loop_factory

        run(go(), shim_loop_factory())
        return
    run(go())


def gateway_config(
    kubernetes: Annotated[
        bool, typer.Option("--kubernetes", help="Upstreams by Kubernetes service name, listening on every interface.")
    ] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of printing.", show_default=False)
    ] = None,
) -> None:
    """Render Envoy's configuration from the gateway template and check it with Envoy itself.

    Without --kubernetes it points at the services on this machine (their configured ports), as `secondbrain up`
    runs it. CORS origins come from SECONDBRAIN_CORS_ORIGINS.
    """
    import tempfile

    from secondbrain.gateway.envoy import validate
    from secondbrain.gateway.envoy_config import kubernetes_layout, local_layout, render

    with errors_as_messages():
        settings = config_with().settings
        text = render(kubernetes_layout(settings) if kubernetes else local_layout(settings))
        with tempfile.TemporaryDirectory() as directory:
            checked = Path(directory) / "envoy.yaml"
            checked.write_text(text, encoding="utf-8")
            validate(checked)
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        typer.echo(f"secondbrain: cannot write {output}: {error.strerror or error}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"wrote {output} (Envoy accepts it)", err=True)


def up(
    vault: VaultOption = None,
    log_format: LogFormatOption = None,
    no_watch: Annotated[
        bool, typer.Option("--no-watch", help="Index the vault once at the start; do not watch it for changes.")
    ] = False,
) -> None:
    """Run the whole system, supervised, until Ctrl-C.

    Prepares the database first, starts ingest, retrieve and chat, then the REST shim and Envoy, indexes the vault
    (with a progress bar) and waits for the embedding model to load; then prints their addresses: open the
    gateway's in a browser. The vault is then watched: each note added, updated or deleted is indexed within a
    second or so and said in one line ("updated Journal/2026-01-20.md"); --no-watch indexes it only at the start.
    At a terminal the servers log short text lines, warnings only unless SECONDBRAIN_LOG_LEVEL is set; elsewhere
    one JSON object a line. If one of them dies, everything stops and the message says which.
    """
    from secondbrain.cli import supervisor

    config = config_with(vault=vault, log_format=log_format)
    code = run(supervisor.run(config, watch=not no_watch))
    raise typer.Exit(code)


def health(
    service: Annotated[Service | None, typer.Argument(help="Check one service; default all three.")] = None,
    address: Annotated[str | None, typer.Option(help="host:port to check instead of the configured address.")] = None,
) -> None:
    """Ask running services whether they are serving (the standard gRPC health check).

    Exits 0 only when every service checked reports SERVING. A service of another database than this
    configuration's (which other commands therefore do not use) is marked so.
    """
    from secondbrain.service.health_client import health_of

    async def go() -> bool:
        settings = config_with().settings
        names = [service] if service else list(Service)
        healthy = True
        for name in names:
            target = address or settings.address_of(name.value)
            health = await health_of(target)
            other = health.database not in (None, settings.database_identity)
            typer.echo(f"{name.value:<9} {target:<22} {health.status}" + ("  (another database)" if other else ""))
            healthy = healthy and health.status == "SERVING"
        return healthy

    if not run(go()):
        raise typer.Exit(1)
