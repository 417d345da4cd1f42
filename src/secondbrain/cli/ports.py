"""The ports a run will listen on, checked before it claims anything: a busy one is refused, naming it, the setting
that chose it and, where the OS says, the process holding it.

A gRPC server binds with SO_REUSEPORT, so a second one on a taken port binds beside the first and shares its calls
(a second `up` was "up" on the first one's servers, then died on a metrics port). The check binds without it: a
listener of any kind makes it fail.
"""

from __future__ import annotations

import errno
import socket
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from secondbrain.config import Settings
from secondbrain.errors import FailedPrecondition

GRPC_SERVERS = ("ingest", "retrieve", "chat")


@dataclass(frozen=True)
class Port:
    """One port a server of the run will bind: who binds it, where, and the setting that chose it."""

    server: str
    host: str
    port: int
    setting: str


def _setting(name: str) -> str:
    return f"SECONDBRAIN_{name.upper()}_PORT"


def ports_of(settings: Settings, server: str, port: int | None = None) -> list[Port]:
    """What `secondbrain serve SERVER` binds: its port (`port`, from --port, else its setting), and a gRPC service's
    metrics port too (SECONDBRAIN_METRICS_PORT, else its gRPC port + 1000, as `secondbrain.service.runner` picks).
    A port 0 (any free one) cannot be taken, so it is left out."""
    key = "gateway" if server == "envoy" else server
    setting = "--port" if port is not None else _setting(key)
    own = settings.port_for(key) if port is None else port
    ports = [Port(server, settings.host, own, setting)]
    if server in GRPC_SERVERS:
        if settings.metrics_port is not None:
            ports.append(
                Port(f"{server}'s metrics", settings.metrics_host, settings.metrics_port, "SECONDBRAIN_METRICS_PORT")
            )
        elif own:
            ports.append(Port(f"{server}'s metrics", settings.metrics_host, own + 1000, f"{setting} + 1000"))
    return [p for p in ports if p.port]


def up_ports(settings: Settings) -> list[Port]:
    """Every port `secondbrain up` binds: the three gRPC services (and their metrics), the shim and Envoy."""
    return [port for server in (*GRPC_SERVERS, "shim", "envoy") for port in ports_of(settings, server)]


def _bind_error(port: Port) -> OSError | None:
    """Why `port` cannot be bound now, or None when it can (the socket is closed at once)."""
    try:
        addresses = socket.getaddrinfo(port.host, port.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        return error
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            # As the servers bind: a connection of an earlier run in TIME_WAIT does not hold the port.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as error:
                return error
    return None


def holder(port: int) -> str | None:
    """The process listening on `port`, as "pid 1234 (secondbrain serve ingest)", where the OS tells (another user's
    processes it may not); else None."""
    import psutil

    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError):
        return None
    pids = {c.pid for c in connections if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN}
    pids.discard(None)
    if not pids:
        return None
    pid = min(pids)
    try:
        command = psutil.Process(pid).cmdline()
    except (psutil.Error, OSError):
        command = []
    return f"pid {pid} ({_shown(command)})" if command else f"pid {pid}"


def _shown(command: list[str]) -> str:
    """A command line as a person knows it: `python -m secondbrain serve ingest` is `secondbrain serve ingest`."""
    if "-m" in command and command.index("-m") + 1 < len(command):
        command = command[command.index("-m") + 1 :]
    else:
        command = [Path(command[0]).name, *command[1:]]
    text = " ".join(" ".join(command).split())
    return text if len(text) <= 80 else text[:79] + "…"


def _problem(port: Port, error: OSError) -> str:
    where = f"port {port.port} ({port.setting}, for {port.server})"
    if error.errno == errno.EADDRINUSE:
        held = holder(port.port)
        return f"{where} is in use" + (f" by {held}" if held else "")
    return f"{where} cannot be bound on {port.host}: {error.strerror or error}"


def refuse_busy(ports: list[Port], doing: str) -> None:
    """Raise FailedPrecondition, naming each port, when any of `ports` is taken or two servers would bind the same
    one; `doing` is what was therefore not done ("nothing was started")."""
    # Each problem, and what to do about it when it is the only one.
    problems: list[tuple[str, str]] = []
    wanted: dict[int, list[Port]] = defaultdict(list)
    for port in ports:
        wanted[port.port].append(port)
    for number, sharing in wanted.items():
        if len(sharing) == 1:
            continue
        if len({p.setting for p in sharing}) == 1:  # SECONDBRAIN_METRICS_PORT, one setting for the three services
            setting, names = sharing[0].setting, [p.server for p in sharing]
            problems.append((
                f"port {number} ({setting}) is wanted by {', '.join(names[:-1])} and {names[-1]} at once",
                f"unset {setting}, and each serves its metrics at its own port + 1000",
            ))  # fmt: skip
            continue
        names = [f"{p.server} ({p.setting})" for p in sharing]
        both = "both " if len(names) == 2 else ""
        problems.append((f"port {number} is wanted by {both}{', '.join(names[:-1])} and {names[-1]}",
                         "give each its own port"))  # fmt: skip
    for port in ports:
        if len(wanted[port.port]) == 1 and (error := _bind_error(port)) is not None:
            problems.append((_problem(port, error), "stop what holds it or choose another port"))
    if len(problems) == 1:
        [(problem, hint)] = problems
        raise FailedPrecondition(f"{problem}; {doing}: {hint}")
    if problems:
        listed = "".join(f"\n  {problem}" for problem, _ in problems)
        raise FailedPrecondition(
            f"{len(problems)} ports cannot be used; {doing}: stop what holds them or choose others:{listed}"
        )
