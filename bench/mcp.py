"""The note tools for assistants: how long an MCP client waits to list the tools and to call `retrieve_passages`,
over stdio (`secondbrain mcp`, spawned as Claude Desktop spawns it) and over streamable HTTP through Envoy (`/mcp`),
each with the official SDK's client, against the same running services.

Every server is a real process; the embedder is a local Ollama-protocol server (bench/chat.py's generated vault).
Run with `make bench` (or `python -m bench.mcp`); results go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench.chat import free_port, indexed_vault, service
from bench.gateway import http_server, summary, timed
from bench.report import table, write_section

QUESTION = "what did project 3 decide about storage and search?"


@contextlib.asynccontextmanager
async def over_stdio(env: dict[str, str]) -> AsyncIterator[tuple[ClientSession, float]]:
    """A session with a spawned `secondbrain mcp`, and how long it took from spawning to initialized (ms)."""
    started = time.perf_counter()
    server = StdioServerParameters(command=sys.executable, args=["-m", "secondbrain", "mcp"], env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session, (time.perf_counter() - started) * 1000


@contextlib.asynccontextmanager
async def over_http(url: str) -> AsyncIterator[tuple[ClientSession, float]]:
    started = time.perf_counter()
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session, (time.perf_counter() - started) * 1000


async def measure(session: ClientSession, calls: int) -> dict[str, list[float]]:
    async def passages() -> None:
        result = await session.call_tool("retrieve_passages", {"question": QUESTION})
        assert not result.is_error, result.content

    for _ in range(5):  # warm: channels, the query embedding path, the plan cache
        await session.list_tools()
        await passages()
    return {"list tools": await timed(session.list_tools, calls), "retrieve_passages": await timed(passages, calls)}


async def main(calls: int) -> None:
    async with indexed_vault() as env:
        ports = {name: free_port() for name in ("ingest", "retrieve", "chat", "shim", "gateway")}
        env.update({f"SECONDBRAIN_{name.upper()}_PORT": str(port) for name, port in ports.items()})
        async with (
            service("retrieve", ports["retrieve"], env),
            service("chat", ports["chat"], env),
            http_server("shim", ports["shim"], env),
            http_server("envoy", ports["gateway"], env),
        ):
            rows = []
            for door, session_of in (
                ("stdio (`secondbrain mcp`)", lambda: over_stdio(env)),
                (
                    "streamable HTTP through Envoy (`/mcp`)",
                    lambda: over_http(f"http://127.0.0.1:{ports['gateway']}/mcp"),
                ),
            ):
                async with session_of() as (session, ready_ms):
                    times = await measure(session, calls)
                rows.append(
                    [door, f"{ready_ms:.0f} ms", summary(times["list tools"]), summary(times["retrieve_passages"])]
                )
    body = "\n".join([
        f"The official SDK's client against running retrieve and chat services (a generated 200-note vault), {calls} "
        "calls each after five to warm up. Over stdio the command uses the running services, as it does when "
        "`secondbrain up` is running; \"ready\" is from spawning the process (or opening the HTTP session) to the "
        "end of MCP's initialize. `retrieve_passages` includes embedding the question and the hybrid statement.",
        "",
        table(["door", "ready", "list tools p50 / p95", "retrieve_passages p50 / p95"], rows),
    ])  # fmt: skip
    write_section("mcp", "The note tools over MCP", body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=50)
    asyncio.run(main(parser.parse_args().calls))
