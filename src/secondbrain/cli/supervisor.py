"""`secondbrain up`: every server as a child process of one supervised tree.

The supervisor starts (or joins) the database first and migrates it, so the children find it ready; then it starts
the three gRPC services, the REST shim and Envoy, waits for each to be ready (the gRPC health check; the shim's
/healthz; the same through Envoy, which proves the whole browser path), indexes the vault through the ingest
service, waits until retrieve's embedding model is loaded, and only then says that it is up and where: the first
question asked after that is answered from the whole vault at once. Ctrl-C (or SIGTERM) stops the children
gracefully, while starting too; a child that dies stops the whole run with a message saying which one.

At a terminal the run is meant to be read: every process writes short text lines (the children inherit the
supervisor's stderr and the format it chose), the servers only their warnings unless SECONDBRAIN_LOG_LEVEL is set,
and a warning every server would give alike (no API token) is given once, by the supervisor.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Literal

import grpc
import httpx2

from secondbrain.cli.ports import refuse_busy, up_ports
from secondbrain.config import Config, Settings
from secondbrain.db import Database
from secondbrain.errors import Unavailable
from secondbrain.jsonlog import SAID_ONCE_ENV, configure_logging, resolve_format
from secondbrain.retrieve.v1 import retrieve_service_pb2 as retrieve_pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as retrieve_grpc
from secondbrain.service.auth import open_channel
from secondbrain.service.health_client import check_health
from secondbrain.service.registry import SERVICES

GRPC_SERVICES = tuple(SERVICES)
STARTUP_TIMEOUT_SECONDS = 60.0
# Embedders that load a model before their first vector: the bundled local one (seconds), and Ollama's (into its
# server). A remote API has nothing to load, and asking it for a vector would be a paid call at every start.
LOADS_A_MODEL = ("local", "ollama")
MODEL_TIMEOUT_SECONDS = 120.0

# Envoy's access log, one line per request, relayed at a terminal (see `_relay_access_log`).
access_log = logging.getLogger("secondbrain.gateway.access")


@dataclass(frozen=True)
class RunLogs:
    """How every process of the run logs: decided once by the supervisor, handed to each child in its environment."""

    level: str
    format: Literal["json", "text"]
    # Warnings the supervisor gives itself (topics of `jsonlog.ONCE_PER_RUN`), which the children leave out.
    said: tuple[str, ...]

    @classmethod
    def of(cls, settings: Settings) -> RunLogs:
        fmt = resolve_format(settings.log_format)
        level = settings.log_level
        # A person at a terminal reads the start and what goes wrong; each server's INFO lines (starting, serving,
        # every call) are for a log collector, or for whoever sets SECONDBRAIN_LOG_LEVEL=INFO.
        if fmt == "text" and "log_level" not in settings.model_fields_set:
            level = "WARNING"
        return cls(level=level, format=fmt, said=("no-token",) if settings.token is None else ())

    def env(self) -> dict[str, str]:
        return {
            "SECONDBRAIN_LOG_LEVEL": self.level,
            "SECONDBRAIN_LOG_FORMAT": self.format,
            SAID_ONCE_ENV: ",".join(self.said),
        }


@dataclass
class Child:
    name: str
    address: str
    process: asyncio.subprocess.Process
    # Reads what the child writes to a pipe (Envoy's access log at a terminal); None when it writes to ours.
    relay: asyncio.Task[None] | None = None
    # Envoy serving HTTPS (SECONDBRAIN_TLS_CERT and SECONDBRAIN_TLS_KEY).
    tls: bool = False

    @property
    def url(self) -> str:
        if self.name in GRPC_SERVICES:
            return f"grpc://{self.address}"
        return f"{'https' if self.tls else 'http'}://{self.address}/"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _address(name: str, settings: Settings) -> str:
    port = settings.port_for("gateway" if name == "envoy" else name)
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    return f"{host}:{port}"


async def _spawn(name: str, config: Config, logs: RunLogs) -> Child:
    env = {**os.environ, **logs.env()}
    if config.settings.vault is not None:
        # Chat reads the vault's personas and settings, so every child sees the vault `up` was given.
        env["SECONDBRAIN_VAULT"] = str(config.settings.vault.resolve())
    # Envoy writes its access log to stdout as JSON, whatever the format: at a terminal it comes through here.
    relayed = name == "envoy" and logs.format == "text"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "serve", name, env=env, start_new_session=True,
        preexec_fn=_stop_with_parent, stdout=asyncio.subprocess.PIPE if relayed else None,
    )  # fmt: skip
    relay = asyncio.create_task(_relay_access_log(process.stdout)) if process.stdout is not None else None
    tls = name == "envoy" and config.settings.tls_cert is not None
    return Child(name=name, address=_address(name, config.settings), process=process, relay=relay, tls=tls)


async def _relay_access_log(stream: asyncio.StreamReader) -> None:
    """Envoy's access log as this process's log lines (text, at a terminal), at INFO: shown when the level lets INFO
    through. Read to the end either way, or a full pipe would stop Envoy."""
    while line := await stream.readline():
        if not access_log.isEnabledFor(logging.INFO):
            continue
        text = line.decode(errors="replace").strip()
        try:
            entry = json.loads(text)
        except ValueError:
            entry = None
        if not isinstance(entry, dict):
            access_log.info(text, extra={"service": "envoy"})
            continue
        entry.pop("time", None)  # the line has its own
        request = " ".join(str(entry.pop(key, "")) for key in ("method", "path", "status"))
        # Envoy writes "-" or null for what a request had none of. The names are the template's own, none a
        # LogRecord attribute.
        fields = {key: value for key, value in entry.items() if value not in (None, "-", "")}
        access_log.info(request, extra={"service": "envoy", **fields})


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
    # Through Envoy, /healthz reaches the shim: the whole HTTP path answers. (Over HTTPS the certificate is not
    # checked: it names the address phones use, not the loopback one asked here, of a child this process started.)
    try:
        async with httpx2.AsyncClient(timeout=1.0, verify=not child.tls) as client:
            return (await client.get(f"{child.url}healthz")).status_code == 200
    except httpx2.HTTPError:
        return False


def _loads_model(child: Child) -> bool:
    """Whether `child` reports ready only once its embedding model has loaded (the registry says which)."""
    return child.name in SERVICES and SERVICES[child.name].loads_model


async def _wait_until_ready(child: Child) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS + (MODEL_TIMEOUT_SECONDS if _loads_model(child) else 0)
    while time.monotonic() < deadline:
        if child.process.returncode is not None:
            raise Unavailable(f"the {child.name} server exited with code {child.process.returncode}; see its log above")
        if await _is_ready(child):
            return
        await asyncio.sleep(0.2)
    raise Unavailable(f"the {child.name} server did not become ready on {child.address}; see its log above")


def _check_alive(children: list[Child]) -> None:
    for child in children:
        if child.process.returncode is not None:
            raise Unavailable(f"the {child.name} server exited with code {child.process.returncode}; see its log above")


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


async def _ingest_and_watch(config: Config, ingest_address: str, background: list[asyncio.Task[None]]) -> None:
    """Sync the vault, as `_ingest`, and go on watching it: the ingest service watches while this run follows it
    (`secondbrain.ingest.watch`), and each change it takes in is a line here ("updated Journal/2026-01-20.md").
    Returns once the first sync is done; the following goes on in a task of `background`, to the end of the run."""
    from secondbrain.cli.terminal import stderr_console
    from secondbrain.errors import SecondbrainError
    from secondbrain.ingest.commands import follow_vault, ingest_service

    vault = config.settings.vault
    assert vault is not None
    root = vault.resolve()
    _say(f"secondbrain: indexing {root}")
    synced = asyncio.Event()
    console = stderr_console()

    async def follow() -> None:
        try:
            async with ingest_service(config, ingest_address, console) as ingest:
                await follow_vault(ingest, root, False, console, as_json=False, synced=synced.set)
        except SecondbrainError as error:
            _say(f"secondbrain: {'stopped watching' if synced.is_set() else 'the vault could not be indexed'}: {error}")
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:
                what = "stopped watching" if synced.is_set() else "the vault could not be indexed"
                _say(f"secondbrain: {what}: {error.details()}")

    task = asyncio.create_task(follow())
    background.append(task)
    await asyncio.wait([task, asyncio.ensure_future(synced.wait())], return_when=asyncio.FIRST_COMPLETED)
    if synced.is_set():
        _say(f"secondbrain: watching {root} for changes")


async def _model_loaded(config: Config, retrieve: str) -> None:
    """Return once the retrieve service can embed a question at once, or say why it cannot. Its health says
    SERVING once its model's load has ended (`secondbrain.retrieve.server._warm_up`), loaded or not: a semantic
    search tells which, and waits for the load where the service does not wait (one older than that). (With no
    vectors in the index it answers at once: no question would use the model yet.)"""
    if config.vault.embedding.provider not in LOADS_A_MODEL:
        return
    request = retrieve_pb.SearchRequest(query="warm-up", mode=retrieve_pb.SEARCH_MODE_SEMANTIC, limit=1)
    async with open_channel(retrieve, config.settings.token) as channel:
        search = retrieve_grpc.RetrieveServiceStub(channel).Search(request, timeout=MODEL_TIMEOUT_SECONDS)
        probe = asyncio.ensure_future(search)
        if not (await asyncio.wait([probe], timeout=1.0))[0]:
            _say("secondbrain: loading the embedding model")
        try:
            await probe
        except grpc.aio.AioRpcError as error:
            _say(f"secondbrain: the retrieve service's embedding model is not ready: {error.details()}")


async def _start(
    config: Config, logs: RunLogs, children: list[Child], background: list[asyncio.Task[None]], watch: bool
) -> None:
    """Start every server (into `children`, so what started is stopped however this ends), index the vault (and,
    with `watch`, follow its changes in a task of `background`) and load the model: everything the first question
    needs."""
    _say("secondbrain: starting the servers")
    for name in GRPC_SERVICES:
        children.append(await _spawn(name, config, logs))
    for child in children:
        ready = asyncio.ensure_future(_wait_until_ready(child))
        if _loads_model(child) and not (await asyncio.wait([ready], timeout=2.0))[0]:
            _say("secondbrain: loading the embedding model")
        await ready
    # The gateway comes after what it routes to, the shim before Envoy.
    for name in ("shim", "envoy"):
        children.append(await _spawn(name, config, logs))
        await _wait_until_ready(children[-1])
    address = {child.name: child.address for child in children}
    if config.settings.vault is not None and watch:
        await _ingest_and_watch(config, address["ingest"], background)
    elif config.settings.vault is not None:
        await _ingest(config, address["ingest"])
    await _model_loaded(config, address["retrieve"])
    # A server that died while the vault was indexed is told now, not after "up".
    _check_alive(children)


async def _unless_stopped(work: Coroutine[Any, Any, None], stop: asyncio.Event) -> bool:
    """Run `work` to its end, or until `stop` is set (Ctrl-C while starting or indexing, which is then cancelled);
    whether it ended. Its error, if any, is raised."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait([task, stopped], return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        stopped.cancel()
        task.result()
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False


def _say_up(children: list[Child], settings: Settings) -> None:
    _say("secondbrain is up:")
    for child in children:
        _say(f"  {child.name:<9} {child.url}")
    gateway = children[-1]
    _say(f"Open {gateway.url} in a browser; the REST API is described at {gateway.url}api/openapi.json")
    if settings.token is None:
        _say("No SECONDBRAIN_API_TOKEN is set, so everything listens on loopback only.")
    _say("Press Ctrl-C to stop.")


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
        if child.relay is not None:
            # The child's end of the pipe closed with it: the relay has read to the end, or will at once.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(child.relay, 5)


async def run(config: Config, *, watch: bool = True) -> int:
    """Run every service until interrupted; the exit code says how it ended. With `watch` (and a vault), the vault
    is watched for changes for the whole run."""
    settings = config.settings
    # Every port is checked before anything is claimed (the database, a server): a second `up` beside a running one
    # is refused here, naming the ports and their holder, and never says it is up on the other one's servers.
    refuse_busy(up_ports(settings), "nothing was started")
    logs = RunLogs.of(settings)
    configure_logging(logs.level, logs.format, service="up")
    # httpx2 logs every request at INFO: here, the readiness polls, one every 0.2 s while a server starts.
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    _say("secondbrain: preparing the database" + ("" if settings.database_url else f" in {settings.data_dir}"))
    # Holding the database open here keeps an embedded server alive for the whole run.
    db = await Database.open(settings)
    children: list[Child] = []
    background: list[asyncio.Task[None]] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        if not await _unless_stopped(_start(config, logs, children, background, watch), stop):
            _say("secondbrain: stopping")
            return 0
        _say_up(children, settings)
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
        # The watch first, so the ingest service is not stopped under a stream still open.
        for task in background:
            task.cancel()
        for task in background:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await _stop(children, settings.shutdown_grace_seconds)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(ValueError):
                loop.remove_signal_handler(sig)
        await db.close()
