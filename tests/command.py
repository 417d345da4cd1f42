"""The `secondbrain` command as a person runs it: a real process, its output captured."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys


def secondbrain(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "secondbrain", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


async def run_secondbrain(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    """The command run without blocking the event loop (a test's servers live on it): exit code, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(process.communicate(), 120)
    return process.returncode or 0, stdout.decode(), stderr.decode()


async def serving_port(process: asyncio.subprocess.Process, line_wait: float = 60) -> int:
    """Read a service's JSON log (its stderr, each line within `line_wait` seconds) until it says it is serving;
    return the port it bound."""
    assert process.stderr is not None
    while line := await asyncio.wait_for(process.stderr.readline(), line_wait):
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # grpc's own native log lines are not JSON
        if entry.get("message") == "serving":
            return int(entry["port"])
    raise AssertionError(f"the service exited ({await process.wait()}) before serving")
