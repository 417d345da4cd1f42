"""Chat overhead: what the chat service adds to a turn beyond retrieval and the model's own pace, one at a time and
with 50 conversations streaming at once, and the chat service's peak memory.

The retrieve and chat services run as real processes (`secondbrain serve`); the LLM and the embedder are local
servers speaking OpenAI's and Ollama's protocols, the LLM answering at a fixed pace. Run with `make bench` (or
`python -m bench.chat`); results go to docs/benchmarks.md. Uses its own embedded PostgreSQL, never DATABASE_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import psutil

from bench.ingest import generate_vault
from bench.report import table, write_section
from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.chat.v1 import chat_service_pb2_grpc as pb_grpc
from secondbrain.config import load_config
from secondbrain.db import Database
from secondbrain.ingest.server import build_ingestor
from secondbrain.service.health_client import wait_until_serving
from tests.wire import OllamaServer, OpenAIServer, Reply

DELTAS = 20
DELTA_DELAY_SECONDS = 0.02  # the model's pace: the server sleeps this before each delta


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.asynccontextmanager
async def service(name: str, port: int, env: dict[str, str]) -> AsyncIterator[psutil.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "serve", name, "--port", str(port), env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        if not await wait_until_serving(f"127.0.0.1:{port}", 60):
            raise RuntimeError(f"the {name} service did not start")
        yield psutil.Process(process.pid)
    finally:
        process.terminate()
        await process.wait()


async def turn(stub: pb_grpc.ChatServiceStub, question: str) -> float:
    """One turn; returns the chat service's overhead in ms: the time to `sources` less the retrieval it reports,
    plus the time from `sources` to the first delta less the model's delay before it."""
    conversation = (await stub.CreateConversation(pb.CreateConversationRequest(), timeout=30)).conversation.id
    started = time.perf_counter()
    sources_at = first_at = None
    retrieval_ms = 0.0
    async for event in stub.SendMessage(pb.SendMessageRequest(conversation_id=conversation, content=question)):
        kind = event.WhichOneof("event")
        now = time.perf_counter()
        if kind == "sources":
            sources_at = now
            retrieval_ms = sum(t.milliseconds for t in event.sources.retrieval.timings if t.stage == "total")
        elif kind == "delta" and first_at is None:
            first_at = now
        elif kind == "error":
            raise RuntimeError(event.error.message)
    assert sources_at is not None and first_at is not None
    before_sources = (sources_at - started) * 1000 - retrieval_ms
    to_first_delta = (first_at - sources_at) * 1000 - DELTA_DELAY_SECONDS * 1000
    return before_sources + to_first_delta


@contextlib.asynccontextmanager
async def indexed_vault(llm: OpenAIServer | None = None) -> AsyncIterator[dict[str, str]]:
    """A generated 200-note vault, indexed through a local Ollama-protocol embedder, with a local OpenAI-protocol
    LLM answering at a fixed pace (or `llm`, a started server the caller scripts); yields the environment the
    servers need. Its own embedded PostgreSQL in a temporary folder, never DATABASE_URL."""
    os.environ.pop("DATABASE_URL", None)  # never write benchmark data into a real database
    with tempfile.TemporaryDirectory(prefix="secondbrain-bench-") as tmp:
        root = Path(tmp)
        vault = root / "vault"
        generate_vault(vault, 200)
        (vault / "secondbrain.json").write_text(json.dumps({
            "embedding": {"provider": "ollama", "model": "nomic-embed-text"},
            "chat": {"default_provider": "openai", "default_model": "gpt-5.4-mini"},
            "retrieve": {"condense": False},
        }))  # fmt: skip
        os.environ.update(SECONDBRAIN_DATA_DIR=str(root / "data"), SECONDBRAIN_VAULT=str(vault))
        async with OllamaServer(dimensions=768) as embedder, contextlib.AsyncExitStack() as servers:
            if llm is None:
                llm = await servers.enter_async_context(OpenAIServer())
                llm.script.default = Reply(deltas=[f"word{i} [1] " for i in range(DELTAS)], delay=DELTA_DELAY_SECONDS)
            env = {
                **os.environ,
                "OLLAMA_URL": embedder.root_url,
                "OPENAI_API_KEY": "sk-bench-0123456789",
                "OPENAI_BASE_URL": llm.base_url,
                "SECONDBRAIN_LOG_LEVEL": "WARNING",
            }
            config = load_config()
            db = await Database.open(config.settings)
            try:
                async for _ in build_ingestor(config, db, env).sync(vault):
                    pass
                yield env
            finally:
                await db.close()


async def main(concurrent: int, sequential: int) -> None:
    async with indexed_vault() as env:
        retrieve_port, chat_port = free_port(), free_port()
        env.update(SECONDBRAIN_RETRIEVE_PORT=str(retrieve_port), SECONDBRAIN_CHAT_PORT=str(chat_port))
        questions = [f"what did project {i % 7} decide about storage and search?" for i in range(concurrent)]
        async with service("retrieve", retrieve_port, env), service("chat", chat_port, env) as chat:
            baseline_mb = chat.memory_info().rss / 2**20
            async with grpc.aio.insecure_channel(f"127.0.0.1:{chat_port}") as channel:
                stub = pb_grpc.ChatServiceStub(channel)
                await turn(stub, "warm up")
                one = [await turn(stub, questions[i % len(questions)]) for i in range(sequential)]
                peak = baseline_mb
                sampling = True

                async def sample() -> None:
                    nonlocal peak
                    while sampling:
                        peak = max(peak, chat.memory_info().rss / 2**20)
                        await asyncio.sleep(0.05)

                sampler = asyncio.create_task(sample())
                started = time.perf_counter()
                many = await asyncio.gather(*(turn(stub, q) for q in questions))
                wall = time.perf_counter() - started
                sampling = False
                await sampler

    def p(samples: list[float], q: float) -> float:
        return sorted(samples)[max(int(len(samples) * q) - 1, 0)]

    body = "\n".join([
        f"A turn: retrieval over a 200-note generated vault, then an answer of {DELTAS} deltas from a local server "
        f"that sleeps {DELTA_DELAY_SECONDS * 1000:.0f} ms before each. Overhead = time to `sources` less the "
        "retrieval the service reports, plus `sources` to the first delta less the server's delay: what chat adds "
        "(storing the question, calling retrieve over gRPC, building the prompt, opening the provider stream).",
        "",
        table(["measure", "value"], [
            ["one at a time: overhead p50 / p95 (target p50 < 20 ms)",
             f"{statistics.median(one):.1f} / {p(one, 0.95):.1f} ms ({sequential} turns)"],
            [f"{concurrent} at once: all completed", f"{len(many)} of {concurrent} in {wall:.2f} s"],
            [f"{concurrent} at once: overhead p50 / p95", f"{statistics.median(many):.1f} / {p(many, 0.95):.1f} ms"],
            ["one answer's own duration (the model's pace)", f"{DELTAS * DELTA_DELAY_SECONDS:.2f} s"],
            ["chat service memory (RSS): idle / peak", f"{baseline_mb:.0f} / {peak:.0f} MB"],
        ]),
    ])  # fmt: skip
    write_section("chat", "Chat overhead", body)
    print(body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--concurrent", type=int, default=50, help="conversations streaming at once (default 50)")
    parser.add_argument("--sequential", type=int, default=30, help="turns measured one at a time (default 30)")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.concurrent, arguments.sequential))
