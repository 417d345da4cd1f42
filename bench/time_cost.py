"""What reading a question's time costs (issue 34): a whole Retrieve over gRPC at 100,000 generated chunks, with
`retrieve.read_time` on and off, for questions that name no time (the issue's bar: within 5%), and the parse alone.

The two settings run as two services over the same database, asked in turn question by question, so a slow moment of
this noisy machine falls on both alike. Run with `make bench` (or `python -m bench.time_cost`); results go to
docs/benchmarks.md. Uses its own embedded PostgreSQL in a temporary directory, never DATABASE_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import grpc

from bench.report import table, write_section
from bench.retrieve import load, percentiles
from secondbrain.config import Config, load_config
from secondbrain.db import Database
from secondbrain.retrieve.question_time import read_time
from secondbrain.retrieve.server import build_retriever, create_server
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.runner import ServiceDeps
from secondbrain.service.server import RunningServer

NOW = datetime(2026, 11, 30, 18, 0, tzinfo=UTC)
# Questions that do name a time, for the parse alone (the generated queries name none).
TIMED = [
    "What did I decide about the garden last week?",
    "what did I write about my knee in March?",
    "after the roofer's inspection, what did we decide about the solar panels?",
    "my latest note on the Lisbon trip",
    "What happened between demolition day and the electrician's first day?",
]


def reading(config: Config, read: bool) -> Config:
    retrieve = config.vault.retrieve.model_copy(update={"read_time": read})
    return Config(config.settings, config.vault.model_copy(update={"retrieve": retrieve}))


async def started(config: Config, db: Database) -> tuple[RunningServer, pb_grpc.RetrieveServiceStub, grpc.aio.Channel]:
    retriever = build_retriever(config, db)
    running = await create_server("127.0.0.1:0", ServiceDeps(config, db), retriever)
    await running.start()
    assert retriever.embedder is not None
    await retriever.embedder.ensure_ready()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
    return running, pb_grpc.RetrieveServiceStub(channel), channel


async def timed_call(stub: pb_grpc.RetrieveServiceStub, query: str) -> float:
    request = pb.RetrieveRequest(
        query=query, options=pb.RetrieveOptions(condense=False, max_passages=8), now=NOW.isoformat()
    )
    begun = time.perf_counter()
    events = [event async for event in stub.Retrieve(request, timeout=60)]
    elapsed = (time.perf_counter() - begun) * 1000
    assert events[0].plan.vector_arm_ran and not events[0].plan.time, "a generated question names no time"
    return elapsed


def parse_ms(questions: list[str]) -> float:
    samples = []
    for question in questions * 3:
        begun = time.perf_counter()
        read_time(question, NOW)
        samples.append((time.perf_counter() - begun) * 1000)
    return statistics.median(samples[len(questions) :])


async def main(size: int, rounds: int) -> None:
    os.environ.pop("DATABASE_URL", None)  # never write benchmark data into a real database
    with tempfile.TemporaryDirectory(prefix="secondbrain-bench-") as tmp:
        os.environ["SECONDBRAIN_DATA_DIR"] = str(Path(tmp) / "data")
        config = load_config()
        db = await Database.open(config.settings)
        servers: list[tuple[RunningServer, grpc.aio.Channel]] = []
        try:
            print(f"{size:,} chunks: loading", flush=True)
            queries = await load(db, size)
            stubs = {}
            for read in (True, False):
                running, stub, channel = await started(reading(config, read), db)
                servers.append((running, channel))
                stubs[read] = stub
            samples: dict[bool, list[float]] = {True: [], False: []}
            for round_number in range(rounds + 1):
                for query in queries:
                    # In turn, the order swapped each round; the first round warms both and is not counted.
                    for read in (True, False) if round_number % 2 else (False, True):
                        elapsed = await timed_call(stubs[read], query)
                        if round_number:
                            samples[read].append(elapsed)
        finally:
            for running, channel in servers:
                await channel.close()
                await running.stop(grace=1)
            await db.close()
    (on50, on95), (off50, off95) = percentiles(samples[True]), percentiles(samples[False])
    rows = [
        ["off (`read_time: false`)", f"{off50:.1f}", f"{off95:.1f}", ""],
        ["on (the default)", f"{on50:.1f}", f"{on95:.1f}", f"{(on50 / off50 - 1) * 100:+.1f}%"],
    ]
    generated = [query for query in queries[:20]]
    body = "\n".join([
        f"A whole Retrieve over gRPC at {size:,} generated chunks (bench/retrieve.py's index: Zipf-distributed words, "
        f"random vectors, onnx runtime, condensing off), {len(queries)} questions that name no time, each asked "
        f"{rounds} times of both services in turn (the order swapped each round, a first warming round not "
        "counted). The issue's bar: with no date in the question, p50 within 5% of reading no time at all.",
        "",
        table(["reading the question's time", "Retrieve p50 ms", "Retrieve p95 ms", "p50 against off"], rows),
        "",
        f"The parse alone (question_time.read_time, p50): {parse_ms(generated):.2f} ms for a question naming no "
        f"time, {parse_ms(TIMED):.2f} ms for one that does (last week, in March, an event, latest). A time named by "
        "an event costs one more search, for the event's day, when the question has one.",
    ])  # fmt: skip
    write_section("time-cost", "What reading a question's time costs", body)
    print(body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000, help="index size (default 100,000)")
    parser.add_argument("--rounds", type=int, default=4, help="times each question is asked of each service")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.chunks, arguments.rounds))
