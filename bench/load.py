"""Load through the gateway: concurrent chat streams and retrieves through Envoy for a fixed time, on loopback.

The whole system runs as separate processes (tests/reliability/cluster.py: its own embedded PostgreSQL, the five
servers, the OpenAI wire server standing in for the LLM). A generated vault is indexed first. Then, for the
duration, `chats` clients each hold one conversation and ask turn after turn over SSE, and `retrieves` clients each
ask for passages (POST /api/retrieve, SSE) one after another, all through Envoy. Counted: every request and every
error (an HTTP error, a stream that ends without `done`, an `error` event), latencies (a turn to its `done`, a
retrieve to its `done`), and each part's memory every ten seconds. At the end every conversation is read back: it must
hold both messages of every turn its client saw finish.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import httpx2

from bench.report import table, write_section
from tests.environment import clean_environ
from tests.reliability.cluster import SERVICES, Cluster, Postgres, rss_megabytes
from tests.reliability.vault import TOPICS, write_vault

if TYPE_CHECKING:
    import psutil

QUESTIONS = [f"How is the {topic} kept in the morning?" for topic in TOPICS]


@dataclass
class Stream:
    """What one kind of request saw."""

    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def quantile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


@dataclass
class LoadResult:
    seconds: float
    chats: int
    retrieves: int
    chat: Stream
    retrieve: Stream
    memory: dict[str, list[float]]
    conversations_checked: int
    conversations_wrong: list[str]
    cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds each part used during the load (its process and descendants): what the two cores went to."""

    @property
    def errors(self) -> int:
        return len(self.chat.errors) + len(self.retrieve.errors) + len(self.conversations_wrong)


async def _events(response: httpx2.Response) -> list[str]:
    names, event = [], ""
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            event = line.removeprefix("event: ")
        elif line.startswith("data: "):
            names.append(event)
    return names


async def _stream(client: httpx2.AsyncClient, path: str, body: dict, into: Stream) -> bool:
    started = time.perf_counter()
    try:
        async with client.stream("POST", path, json=body) as response:
            if response.status_code != 200:
                into.errors.append(f"HTTP {response.status_code}: {(await response.aread())[:200]!r}")
                return False
            names = await _events(response)
    except httpx2.HTTPError as error:
        into.errors.append(f"{type(error).__name__}: {error}")
        return False
    if not names or names[-1] != "done" or "error" in names:
        into.errors.append(f"stream ended {names[-3:]}")
        return False
    into.latencies.append(time.perf_counter() - started)
    return True


async def run_load(cluster: Cluster, seconds: float, chats: int, retrieves: int) -> LoadResult:
    chat, retrieve = Stream(), Stream()
    memory: dict[str, list[float]] = {name: [] for name in SERVICES}
    finished_turns: dict[str, int] = {}
    limits = httpx2.Limits(max_connections=chats + retrieves + 10, max_keepalive_connections=chats + retrieves + 10)
    async with httpx2.AsyncClient(base_url=cluster.gateway_url, timeout=120, limits=limits) as client:
        deadline = time.monotonic() + seconds

        async def chatter(number: int) -> None:
            response = await client.post("/api/chat/conversations", json={"title": f"load {number}"})
            response.raise_for_status()
            conversation = response.json()["conversation"]["id"]
            finished_turns[conversation] = 0
            turn = 0
            while time.monotonic() < deadline:
                question = QUESTIONS[(number + turn) % len(QUESTIONS)]
                path = f"/api/chat/conversations/{conversation}/messages"
                if await _stream(client, path, {"content": question}, chat):
                    finished_turns[conversation] += 1
                turn += 1

        async def retriever(number: int) -> None:
            turn = 0
            while time.monotonic() < deadline:
                question = QUESTIONS[(number + turn) % len(QUESTIONS)]
                await _stream(client, "/api/retrieve", {"query": question}, retrieve)
                turn += 1

        async def sampler() -> None:
            while True:
                for name in SERVICES:
                    memory[name].append(rss_megabytes(cluster.processes[name]))
                await asyncio.sleep(10)

        sampling = asyncio.create_task(sampler())
        cpu_before = {name: cpu_seconds(cluster.processes[name]) for name in SERVICES}
        cpu_before["load clients"] = cpu_seconds(None)
        postgres_before = cluster_postgres_cpu()
        started = time.monotonic()
        await asyncio.gather(*(chatter(i) for i in range(chats)), *(retriever(i) for i in range(retrieves)))
        elapsed = time.monotonic() - started
        sampling.cancel()
        cpu = {name: cpu_seconds(cluster.processes[name]) - cpu_before[name] for name in SERVICES}
        cpu["load clients"] = cpu_seconds(None) - cpu_before["load clients"]
        cpu["PostgreSQL"] = cluster_postgres_cpu() - postgres_before
        for name in SERVICES:
            memory[name].append(rss_megabytes(cluster.processes[name]))

        wrong = []
        for conversation, turns in finished_turns.items():
            response = await client.get(f"/api/chat/conversations/{conversation}")
            stored = response.json()["conversation"].get("messages", [])
            complete = [
                m for m in stored if m["role"] == "MESSAGE_ROLE_ASSISTANT" and m["status"] == "MESSAGE_STATUS_COMPLETE"
            ]
            if len(stored) != 2 * turns or len(complete) != turns:
                wrong.append(f"{conversation}: {turns} turns finished, {len(stored)} messages stored")
    return LoadResult(elapsed, chats, retrieves, chat, retrieve, memory, len(finished_turns), wrong, cpu)


async def start_cluster(workdir: Path, postgres: Postgres, notes: int, runtime: str | None = None) -> Cluster:
    """The cluster over a generated vault of `notes` notes, indexed; `runtime` sets `embedding.runtime` (unset: the
    default). The runtime's export, if it has one, is made first by a process of its own, so no service's memory
    holds the torch an export imports."""
    vault = workdir / "vault"
    write_vault(vault, notes, version="steady")
    models = workdir / "models"
    # Every client here is 127.0.0.1: the per-client limit on questions would stop the load, so it is off.
    cluster = Cluster(
        workdir, postgres.dsn, vault, llm_delay=0.02, llm_deltas=12,
        extra_env={"SECONDBRAIN_CHAT_MESSAGES_PER_MINUTE": "0", "SECONDBRAIN_MODEL_CACHE_DIR": str(models)},
    )  # fmt: skip
    embedding = {} if runtime is None else {"runtime": runtime}
    prepare = ["prepare-model", "--models-dir", str(models), *(["--runtime", runtime] if runtime else [])]
    done = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", *prepare, env=clean_environ(), stdout=asyncio.subprocess.DEVNULL
    )
    if await done.wait() != 0:
        raise RuntimeError("loading the local model failed")
    cluster.write_settings(embedding=embedding)
    await cluster.migrate()
    await cluster.start()
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "secondbrain", "ingest", "--address", cluster.address("ingest"), "--json"),
        env=cluster.env(),
        stdout=asyncio.subprocess.DEVNULL,
    )
    if await process.wait() != 0:
        raise RuntimeError("indexing the load vault failed; see the ingest log in " + str(workdir / "logs"))
    return cluster


def cpu_seconds(process: asyncio.subprocess.Process | None) -> float:
    """User + system CPU seconds of `process` and its descendants (None: this process, the load's clients)."""
    import psutil

    root = psutil.Process(process.pid if process is not None else None)
    return _cpu_of([root, *(root.children(recursive=True) if process is not None else [])])


def cluster_postgres_cpu() -> float:
    """CPU seconds of every PostgreSQL process on the machine (the cluster's embedded one is the only one running
    during a benchmark; its backends are not our children)."""
    import psutil

    return _cpu_of(process for process in psutil.process_iter(["name"]) if process.info["name"] == "postgres")


def _cpu_of(processes: Iterable[psutil.Process]) -> float:
    """User + system CPU seconds of `processes`, those that ended meanwhile left out."""
    import psutil

    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            total += times.user + times.system
    return total


def describe(result: LoadResult) -> list[list[str]]:
    """Rows of (what, figure) for a report."""
    rows = [
        ["duration", f"{result.seconds:.0f} s"],
        ["clients", f"{result.chats} chat streams + {result.retrieves} retrieves, all through Envoy"],
        ["chat turns completed", f"{len(result.chat.latencies)} ({len(result.chat.latencies) / result.seconds:.1f}/s)"],
        ["chat turn p50 / p95", f"{result.chat.quantile(0.5):.0f} / {result.chat.quantile(0.95):.0f} ms"],
        [
            "retrieves completed",
            f"{len(result.retrieve.latencies)} ({len(result.retrieve.latencies) / result.seconds:.1f}/s)",
        ],
        ["retrieve p50 / p95", f"{result.retrieve.quantile(0.5):.0f} / {result.retrieve.quantile(0.95):.0f} ms"],
        ["errors", f"{len(result.chat.errors)} chat, {len(result.retrieve.errors)} retrieve"],
        [
            "conversations stored whole",
            f"{result.conversations_checked - len(result.conversations_wrong)} of {result.conversations_checked}",
        ],
    ]
    if result.cpu:
        available = (os.cpu_count() or 1) * result.seconds
        shares = ", ".join(f"{name} {seconds / available:.0%}" for name, seconds in result.cpu.items())
        rows.append([f"CPU used (share of {os.cpu_count()} cores' time)", shares])
    for name, samples in result.memory.items():
        if samples:
            # Start, a third of the way, two thirds, end: a leak shows as a steady climb, warm-up as an early step.
            marks = [samples[0], samples[len(samples) // 3], samples[2 * len(samples) // 3], samples[-1]]
            rows.append([f"{name} RSS: start, ⅓, ⅔, end", " → ".join(f"{mark:.0f}" for mark in marks) + " MB"])
    return rows


async def main(seconds: float, chats: int, retrieves: int, notes: int, runtime: str | None = None) -> LoadResult:
    with tempfile.TemporaryDirectory(prefix="secondbrain-load-") as directory:
        workdir = Path(directory)
        postgres = Postgres(workdir)
        try:
            cluster = await start_cluster(workdir, postgres, notes, runtime)
            try:
                result = await run_load(cluster, seconds, chats, retrieves)
            finally:
                await cluster.close()
        finally:
            postgres.close()
    for what, figure in describe(result):
        print(f"{what:>36}  {figure}")
    for error in (result.chat.errors + result.retrieve.errors + result.conversations_wrong)[:10]:
        print("  error:", error)
    return result


def retrieve_rate(result: LoadResult) -> float:
    return len(result.retrieve.latencies) / result.seconds


async def compare(runtimes: list[str], seconds: float, chats: int, retrieves: int, notes: int, rounds: int) -> int:
    """The same load under each embedder runtime, side by side in docs/benchmarks.md: `rounds` rounds, each running
    every runtime once (the order reversed every other round, so a drift of the machine's speed over the run falls
    on both), each run in a cluster of its own. On this machine two runs of the same code a quarter of an hour apart
    have differed by a third, so a single pair decides nothing: every round is reported, and the ratio is the
    median of the rounds' ratios, each taken within its round."""
    results: dict[str, list[LoadResult]] = {runtime: [] for runtime in runtimes}
    for number in range(rounds):
        order = runtimes if number % 2 == 0 else runtimes[::-1]
        for runtime in order:
            print(f"\nround {number + 1} of {rounds}, embedding.runtime {runtime}: {chats} chat streams + "
                  f"{retrieves} retrieves for {seconds:.0f} s")  # fmt: skip
            results[runtime].append(await main(seconds, chats, retrieves, notes, runtime))
    # Each runtime's median round (by retrieves a second) stands for it in the table.
    median = {runtime: sorted(runs, key=retrieve_rate)[len(runs) // 2] for runtime, runs in results.items()}
    columns = [describe(result) for result in median.values()]
    rows = [[what, *(column[row][1] for column in columns)] for row, (what, _) in enumerate(columns[0])]
    base = runtimes[0]
    per_round = "; ".join(
        f"round {number + 1}: "
        + ", ".join(f"{runtime} {retrieve_rate(runs[number]):.1f}/s" for runtime, runs in results.items())
        for number in range(rounds)
    )
    ratios = {
        runtime: statistics.median(retrieve_rate(run) / retrieve_rate(results[base][n]) for n, run in enumerate(runs))
        for runtime, runs in results.items()
        if runtime != base
    }
    body = "\n".join([
        f"The load above (the OpenAI wire server streaming 12 words 20 ms apart, a {notes}-note generated vault) under "
        f"each `embedding.runtime`, in {rounds} round(s) of one run per runtime on the same machine (the order "
        f"reversed every other round), each run in a cluster of its own (the runtime's export made beforehand by a "
        f"process of its own, so no service holds the torch an export imports). The table shows each runtime's "
        f"median round by retrieves a second.",
        "",
        table(["measure", *runtimes], rows),
        "",
        f"Retrieves a second, every round: {per_round}.",
        "",
        f"Retrieves a second against {base}, the median of the rounds' ratios: "
        + ", ".join(f"{runtime} {ratio:.2f}x" for runtime, ratio in ratios.items())
        + ".",
    ])  # fmt: skip
    write_section("load-runtimes", "Load through Envoy under each embedder runtime", body)
    print(body)
    return 1 if any(result.errors for runs in results.values() for result in runs) else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=300, help="how long the load runs (default 300)")
    parser.add_argument("--chats", type=int, default=50, help="concurrent chat streams (default 50)")
    parser.add_argument("--retrieves", type=int, default=200, help="concurrent retrieves (default 200)")
    parser.add_argument("--notes", type=int, default=200, help="notes in the generated vault (default 200)")
    parser.add_argument(
        "--runtimes", nargs="+", choices=["torch", "onnx", "onnx-int8"],
        help="run the load once per embedding.runtime and write them side by side to docs/benchmarks.md",
    )  # fmt: skip
    parser.add_argument(
        "--rounds", type=int, default=1,
        help="with --runtimes: how many rounds of one run per runtime (default 1); the ratio is the rounds' median",
    )  # fmt: skip
    options = parser.parse_args()
    if options.runtimes:
        raise SystemExit(
            asyncio.run(
                compare(
                    options.runtimes, options.seconds, options.chats, options.retrieves, options.notes, options.rounds
                )
            )
        )
    outcome = asyncio.run(main(options.seconds, options.chats, options.retrieves, options.notes))
    p50 = 1000 * statistics.median(outcome.chat.latencies or [0])
    print(json.dumps({"errors": outcome.errors, "p50_chat_ms": round(p50)}))
    raise SystemExit(1 if outcome.errors else 0)
