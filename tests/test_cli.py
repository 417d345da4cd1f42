"""The `secondbrain` command as a person runs it: real processes, real ports, real PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from secondbrain.service.health_client import check_health

SERVICE_NAMES = {
    "ingest": "secondbrain.ingest.v1.IngestService",
    "retrieve": "secondbrain.retrieve.v1.RetrieveService",
    "chat": "secondbrain.chat.v1.ChatService",
}


def secondbrain(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secondbrain", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def _clean_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SECONDBRAIN_")}
    env.pop("DATABASE_URL", None)
    return {**env, **extra}


async def _serving_port(process: asyncio.subprocess.Process) -> int:
    """Read the service's JSON log until it says it is serving; return the port it bound."""
    assert process.stderr is not None
    while line := await asyncio.wait_for(process.stderr.readline(), 60):
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # grpc's own native log lines are not JSON
        if entry.get("message") == "serving":
            return int(entry["port"])
    raise AssertionError(f"the service exited ({await process.wait()}) before serving")


async def _serve_and_check(service: str, env: dict[str, str]) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "serve", service, "--port", "0", env=env, stderr=asyncio.subprocess.PIPE
    )
    try:
        port = await _serving_port(process)
        address = f"127.0.0.1:{port}"
        assert await check_health(address) == "SERVING"
        assert await check_health(address, SERVICE_NAMES[service]) == "SERVING"
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0
        assert await check_health(address, rpc_timeout=1) == "UNREACHABLE"
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.mark.parametrize("service", sorted(SERVICE_NAMES))
async def test_serve_answers_health_and_stops_on_sigterm(service: str, service_env: dict[str, str]) -> None:
    await _serve_and_check(service, service_env)


async def test_serve_on_the_embedded_default(tmp_path: Path) -> None:
    """With DATABASE_URL unset, the service starts its own PostgreSQL in the data directory and migrates it."""
    env = _clean_env(XDG_DATA_HOME=str(tmp_path / "xdg"))
    await _serve_and_check("retrieve", env)
    assert (tmp_path / "xdg" / "secondbrain" / "postgres" / "PG_VERSION").is_file()
    # The service was the last user of the embedded server, so stopping it stopped PostgreSQL too.
    assert not (tmp_path / "xdg" / "secondbrain" / "postgres" / "postmaster.pid").exists()


def test_migrate_reports_and_is_idempotent(empty_database: str, tmp_path: Path) -> None:
    env = _clean_env(DATABASE_URL=empty_database, SECONDBRAIN_DATA_DIR=str(tmp_path))
    first = secondbrain("migrate", env=env)
    assert first.returncode == 0, first.stderr
    assert "applied 0001_initial" in first.stdout
    second = secondbrain("migrate", env=env)
    assert second.returncode == 0, second.stderr
    assert "applied" not in second.stdout
    assert "schema is up to date" in second.stdout


def test_migrate_wait_applies_nothing_and_waits_for_the_schema(empty_database: str, tmp_path: Path) -> None:
    env = _clean_env(DATABASE_URL=empty_database, SECONDBRAIN_DATA_DIR=str(tmp_path))
    waited = secondbrain("migrate", "--wait", "0", env=env)
    assert waited.returncode == 1
    assert "not up to date" in waited.stderr and "0001_initial" in waited.stderr and "migration Job" in waited.stderr
    assert secondbrain("migrate", env=env).returncode == 0
    ready = secondbrain("migrate", "--wait", "5", env=env)
    assert ready.returncode == 0, ready.stderr
    assert "schema is up to date" in ready.stdout and "applied" not in ready.stdout


def test_unreachable_database_is_a_clear_error(service_env: dict[str, str]) -> None:
    env = {**service_env, "DATABASE_URL": "postgresql://me:hunter2@127.0.0.1:9/notes"}
    result = secondbrain("serve", "retrieve", "--port", "0", env=env)
    assert result.returncode == 1
    assert "cannot connect to PostgreSQL at postgresql://me:***@127.0.0.1:9/notes" in result.stderr
    assert "hunter2" not in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_configuration_is_a_clear_error(service_env: dict[str, str]) -> None:
    result = secondbrain("serve", "chat", env={**service_env, "SECONDBRAIN_CHAT_PORT": "seventy"})
    assert result.returncode == 1
    assert "SECONDBRAIN_CHAT_PORT" in result.stderr
    assert "Traceback" not in result.stderr


def test_health_of_nothing_running_fails(service_env: dict[str, str]) -> None:
    result = secondbrain("health", "ingest", "--address", "127.0.0.1:9", env=service_env)
    assert result.returncode == 1
    assert "UNREACHABLE" in result.stdout


def test_help_explains_every_command(service_env: dict[str, str]) -> None:
    result = secondbrain("--help", env=service_env)
    assert result.returncode == 0
    for command in ("serve", "up", "migrate", "health"):
        assert command in result.stdout
