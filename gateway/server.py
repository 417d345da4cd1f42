"""Running the shim (uvicorn) and Envoy: `start_shim` for tests and the supervisor, `main_*` for `secondbrain serve`."""

from __future__ import annotations

import asyncio
import logging
import os
import select
import selectors
import signal
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from secondbrain.config import Config, Settings
from secondbrain.errors import Unavailable
from secondbrain.gateway.backends import Backends
from secondbrain.gateway.endpoints import SERVICES
from secondbrain.gateway.envoy import command, prepare
from secondbrain.gateway.envoy_config import envoy_workdir, local_layout, render
from secondbrain.gateway.request_message import BODY_TIMEOUT_SECONDS
from secondbrain.gateway.shim import create_app
from secondbrain.jsonlog import configure_logging
from secondbrain.service.auth import is_loopback
from secondbrain.service.client_address import networks
from secondbrain.service.listener_bounds import (
    ACCEPT_ERRORS_LOG_EVERY_SECONDS,
    SHIM_ACCEPT_BACKLOG,
    SHIM_HEAD_TIMEOUT_SECONDS,
    SHIM_KEEP_ALIVE_SECONDS,
    SHIM_MAX_CONNECTIONS,
)
from secondbrain.service.observe import CONNECTIONS_CLOSED
from secondbrain.service.tracing import configure_tracing

log = logging.getLogger(__name__)

# Each server's connections that have not yet sent a whole request head, the longest open first.
_without_a_request: WeakKeyDictionary[ServerState, OrderedDict[BoundedH11Protocol, None]] = WeakKeyDictionary()

# Envoy at "info" prints dozens of lines at every start; warnings are what a person needs to see.
# Envoy's level for ours. Never below info: at debug Envoy logs every request's headers, the bearer token among them,
# and it has no way to redact one.
ENVOY_LOG_LEVEL = {"DEBUG": "info", "INFO": "warning", "WARNING": "warning", "ERROR": "error"}
# A stream still open at shutdown gets this long to finish before its connection is closed.
SHUTDOWN_GRACE_SECONDS = 5
# A request line and headers; ours are a few hundred bytes, a bearer token included.
MAX_HEAD_BYTES = 16 * 1024
KEEP_ALIVE_SECONDS = SHIM_KEEP_ALIVE_SECONDS


def default_ui_dir() -> Path:
    """The web UI's build output: SECONDBRAIN_UI_DIR, else ui/dist in the source tree."""
    configured = os.environ.get("SECONDBRAIN_UI_DIR")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parent.parent / "ui" / "dist"


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 connection, bounded as listener_bounds says: closed when its request head is not whole within
    `head_timeout` of the connection opening or of the previous response (uvicorn's keep-alive timer stops at the
    first byte, so one byte held a connection for ever); and when it would be one connection more than
    `max_connections`, the connection open longest without having sent a whole request head, once what it sent has
    been read, is closed to make room for it (the new one itself when there is none). A flood of idle connections
    then only replaces its own: Envoy's next connection, which sends its request at once, is served (the flood
    benchmark's REST questions through Envoy failed with 503 while new connections were the ones closed)."""

    head_timeout: float = SHIM_HEAD_TIMEOUT_SECONDS
    max_connections: int = SHIM_MAX_CONNECTIONS
    _head_timer: asyncio.TimerHandle | None = None
    _read_once: bool = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        waiting = _without_a_request.setdefault(self.server_state, OrderedDict())
        if len(self.connections) > self.max_connections:
            CONNECTIONS_CLOSED.labels("over the connection limit").inc()
            oldest = next(iter(waiting), None)
            if oldest is None or not oldest._read_once:
                transport.abort()
                return
            del waiting[oldest]
            oldest.transport.abort()
        waiting[self] = None
        self._read_once = False
        # The transport starts reading on the loop's next turn; the turn after it, whatever the client sent at once
        # has been read. Only then may this connection be closed for a newer one (a burst of a flood, accepted
        # together, would otherwise close an honest connection before its request head was read).
        self.loop.call_soon(self.loop.call_soon, self._has_been_read)
        self._arm_head_timer()

    def _has_been_read(self) -> None:
        self._read_once = True

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        self._has_asked()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the request's head is in (or the connection is over)
            self._disarm_head_timer()
            self._has_asked()

    def _has_asked(self) -> None:
        waiting = _without_a_request.get(self.server_state)
        if waiting is not None:
            waiting.pop(self, None)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm_head_timer()

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_too_late)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_late(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            CONNECTIONS_CLOSED.labels("request head too slow").inc()
            self.transport.close()


class AcceptErrorsCounted(logging.Filter):
    """On asyncio's logger: an accept that failed for want of descriptors (a connection flood at the file limit) is
    logged once per `every` seconds with the count since, and without its traceback; asyncio logs one each, with a
    traceback (a probe's flood wrote 849,919 of them, 464 MB, in 75 s)."""

    MESSAGE = "socket.accept() out of system resource"

    def __init__(self, every: float = ACCEPT_ERRORS_LOG_EVERY_SECONDS) -> None:
        super().__init__()
        self.every = every
        self.unlogged = 0
        self.last = float("-inf")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != self.MESSAGE:
            return True
        self.unlogged += 1
        now = record.created
        if now - self.last < self.every:
            return False
        error = record.exc_info[1] if record.exc_info else None
        record.msg = f"{self.unlogged} connection(s) could not be accepted: out of file descriptors or memory (%s)"
        record.args = (error,)
        record.exc_info = None
        record.exc_text = None
        self.unlogged = 0
        self.last = now
        return True


def count_accept_errors() -> None:
    """Install AcceptErrorsCounted on asyncio's logger, once per process."""
    asyncio_log = logging.getLogger("asyncio")
    if not any(isinstance(existing, AcceptErrorsCounted) for existing in asyncio_log.filters):
        asyncio_log.addFilter(AcceptErrorsCounted())


@dataclass
class RunningShim:
    server: uvicorn.Server
    task: asyncio.Task[None]
    port: int

    async def stop(self) -> None:
        self.server.should_exit = True
        await self.task


def _forget_closed_registrations(loop: asyncio.AbstractEventLoop) -> None:
    """Drop the loop's registrations of descriptors already closed, naming what registered each. A descriptor closed
    without its reader being removed keeps its registration; the next socket given its number (the lowest free one:
    often this listening socket) is then "registered" with no change the selector passes on to epoll, which dropped
    the closed one, and no connection to it is ever accepted. Full test runs saw exactly that: a shim listening,
    never answering (tests/gateway/conftest.py)."""
    selector = getattr(loop, "_selector", None)
    if selector is None:
        return
    for key in list(selector.get_map().values()):
        try:
            os.fstat(key.fd)
        except OSError:
            selector.unregister(key.fd)
            log.warning(
                "an event loop registration outlived its descriptor; dropped before listening",
                extra={"fd": key.fd, "registered": repr(key.data)},
            )


def _keep_epoll_in_step(loop: asyncio.AbstractEventLoop) -> None:
    """Make the loop's epoll selector tell epoll every registration it changes, even when the events are unchanged.
    It skips epoll then, so a descriptor whose number was closed and reused while still registered (epoll dropped the
    closed one) stays unwatched: a listening socket or an accepted connection that is never read. Once per loop."""
    selector = getattr(loop, "_selector", None)
    if not isinstance(selector, selectors.EpollSelector) or getattr(selector, "_kept_in_step", False):
        return
    modify = selector.modify

    def modify_in_step(fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        key = modify(fileobj, events, data)
        mask = (select.EPOLLIN if events & selectors.EVENT_READ else 0) | (
            select.EPOLLOUT if events & selectors.EVENT_WRITE else 0
        )
        epoll = selector._selector  # type: ignore[attr-defined]
        try:
            epoll.modify(key.fd, mask)
        except FileNotFoundError:  # not in epoll: the registration outlived the descriptor it was made for
            epoll.register(key.fd, mask)
        except OSError:  # closed: the loop finds out when it next uses it, as before
            pass
        return key

    selector.modify = modify_in_step  # type: ignore[method-assign]
    selector._kept_in_step = True  # type: ignore[attr-defined]


async def start_shim(
    settings: Settings,
    *,
    host: str | None = None,
    port: int | None = None,
    addresses: Mapping[str, str] | None = None,
    ui_dir: Path | None = None,
    body_timeout: float = BODY_TIMEOUT_SECONDS,
) -> RunningShim:
    """The shim serving on `host:port` (port 0: any free port) in front of `addresses` (default: the configured
    services); returns once it accepts connections."""
    backends = Backends(addresses or {name: settings.address_of(name) for name in SERVICES}, settings.token)
    app = create_app(
        backends,
        settings.token,
        ui_dir or default_ui_dir(),
        body_timeout=body_timeout,
        proxies=networks(settings.trusted_proxies),
        trusted_hops=settings.trusted_proxy_hops,
        metrics_open=not is_loopback(settings.metrics_host),
    )
    config = uvicorn.Config(
        app,
        host=host or settings.host,
        port=settings.shim_port if port is None else port,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        # h11 even where httptools is installed, so the limits in force are these: a request head over
        # MAX_HEAD_BYTES is refused, a connection idle between requests is closed after KEEP_ALIVE_SECONDS, one
        # whose head is not whole after SHIM_HEAD_TIMEOUT_SECONDS is closed, and so is one over
        # SHIM_MAX_CONNECTIONS (BoundedH11Protocol).
        # (The body's own limits, size and time, are the shim's.)
        http=BoundedH11Protocol,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        # Whom a request is from is the shim's own rule (ClientAddress, SECONDBRAIN_TRUSTED_PROXIES); uvicorn's
        # would put any text a loopback caller wrote in X-Forwarded-For in the place of the peer's address.
        proxy_headers=False,
        backlog=SHIM_ACCEPT_BACKLOG,
    )
    count_accept_errors()
    _forget_closed_registrations(asyncio.get_running_loop())
    _keep_epoll_in_step(asyncio.get_running_loop())
    server = uvicorn.Server(config)
    # The process's signal handlers belong to whoever runs the loop (serve, the supervisor, a test).
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # raises what stopped it
            raise Unavailable(f"the shim could not listen on {config.host}:{config.port}; is the port in use?")
        await asyncio.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    return RunningShim(server=server, task=task, port=port)


async def _until_signalled() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def _say_who_may_connect(settings: Settings, what: str) -> None:
    if settings.token is None:
        log.warning(f"no SECONDBRAIN_API_TOKEN: the {what} listens on loopback only", extra={"host": settings.host})


def shim_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop the shim's process runs on: uvloop's where it is installed (not on Windows), else asyncio's.
    Under a flood of reconnecting idle connections on the shim's port, asyncio's own setup of each connection took
    the loop's turns to about 0.3 s (a profile: 16,600 connections in 15 s), so a REST answer's events waited, up
    to seconds; on uvloop a turn took 21 ms at the 99th percentile, 59 ms at most."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def main_shim(config: Config, port: int | None = None) -> None:
    """`secondbrain serve shim`."""
    settings = config.settings
    configure_logging(settings.log_level, settings.log_format, service="shim")
    configure_tracing("shim")
    _say_who_may_connect(settings, "shim")
    shim = await start_shim(settings, port=port)
    log.info("serving", extra={"service": "shim", "port": shim.port})
    try:
        await _until_signalled()
    finally:
        await shim.stop()
    log.info("stopped")


def main_envoy(config: Config, port: int | None = None) -> None:
    """`secondbrain serve envoy`: render the local config, then become Envoy (exec), so a signal to this process
    reaches Envoy itself and no Envoy outlives its supervisor."""
    settings = config.settings
    configure_logging(settings.log_level, settings.log_format, service="envoy")
    _say_who_may_connect(settings, "gateway")
    layout = local_layout(settings, listen_port=port)
    config_path = prepare(envoy_workdir(settings), render(layout), layout.admin_socket)
    log.info(
        "starting envoy", extra={"config": str(config_path), "port": settings.gateway_port if port is None else port}
    )
    logging.shutdown()
    argv = command(config_path, ENVOY_LOG_LEVEL[settings.log_level])
    os.execv(argv[0], argv)
