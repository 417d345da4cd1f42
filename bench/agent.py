"""Agent mode's own cost: what the tool loop adds per step beyond the model's time and the tools' services.

A scripted model (a local server speaking OpenAI's protocol, answering at once) takes the same four steps every
turn: retrieve_passages, read_note, note_links, read_note of a linked note, then an answer. The retrieve and chat
services run as real processes over a generated 200-note vault. The chat service reports, per turn, the time its
tools waited on the retrieve service (`tools`) and the loop's own time around them (`agent_overhead`: parsing the
arguments, numbering and fitting the passages, rendering the results, counting their tokens). Run with
`make bench` (or `python -m bench.agent`); results go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import grpc

from bench.chat import free_port, indexed_vault, service
from bench.gateway import p
from bench.report import table, write_section
from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.chat.v1 import chat_service_pb2_grpc as pb_grpc
from tests.wire import OpenAIServer, Reply
from tests.wire.script import ToolCall

QUESTION = "what did project 3 decide about storage and search?"
STEPS = 4


def script(llm: OpenAIServer, turn: int) -> None:
    """One turn's model: four tool steps, then an answer citing what they found."""
    llm.script.push(
        Reply(deltas=[], tool_calls=[ToolCall("retrieve_passages", {"question": QUESTION, "passages": 4},
                                              id=f"t{turn}_search")]),
        Reply(deltas=[], tool_calls=[ToolCall("read_note", {"path": "Area 3/Project 3/Note 3.md"},
                                              id=f"t{turn}_read")]),
        Reply(deltas=[], tool_calls=[ToolCall("note_links", {"path": "Area 3/Project 3/Note 3.md"},
                                              id=f"t{turn}_links")]),
        Reply(deltas=[], tool_calls=[ToolCall("read_note", {"path": "Area 10/Project 3/Note 10.md", "end_line": 12},
                                              id=f"t{turn}_follow")]),
        Reply(deltas=["Project 3 chose ", "[1] and [9]."]),
    )  # fmt: skip


async def turn(stub: pb_grpc.ChatServiceStub, llm: OpenAIServer, number: int) -> dict[str, float]:
    script(llm, number)
    conversation = (await stub.CreateConversation(pb.CreateConversationRequest(), timeout=30)).conversation.id
    request = pb.SendMessageRequest(conversation_id=conversation, content=QUESTION, mode="agent")
    started = time.perf_counter()
    called: dict[str, float] = {}
    round_trips: list[float] = []
    timings: dict[str, float] = {}
    async for event in stub.SendMessage(request, timeout=60):
        kind = event.WhichOneof("event")
        if kind == "tool_call":
            called[event.tool_call.id] = time.perf_counter()
        elif kind == "tool_result":
            if event.tool_result.error:
                raise RuntimeError(event.tool_result.error)
            round_trips.append((time.perf_counter() - called[event.tool_result.id]) * 1000)
        elif kind == "done":
            timings = {t.stage: t.milliseconds for t in event.done.timings}
        elif kind == "error":
            raise RuntimeError(event.error.message)
    if len(round_trips) != STEPS:
        raise RuntimeError(f"expected {STEPS} tool steps, got {len(round_trips)}")
    return {
        "overhead": timings["agent_overhead"] / STEPS,
        "tools": timings["tools"] / STEPS,
        "event_gap": statistics.median(round_trips),
        "turn": (time.perf_counter() - started) * 1000,
        "retrieval": timings["retrieval"],
    }


async def main(turns: int) -> None:
    async with OpenAIServer() as llm, indexed_vault(llm) as env:
        retrieve_port, chat_port = free_port(), free_port()
        env.update(SECONDBRAIN_RETRIEVE_PORT=str(retrieve_port), SECONDBRAIN_CHAT_PORT=str(chat_port),
                   SECONDBRAIN_CHAT_MESSAGES_PER_MINUTE="0")  # fmt: skip
        async with (
            service("retrieve", retrieve_port, env),
            service("chat", chat_port, env),
            grpc.aio.insecure_channel(f"127.0.0.1:{chat_port}") as channel,
        ):
            stub = pb_grpc.ChatServiceStub(channel)
            for number in range(3):  # warm: channels, the embedder path, tiktoken
                await turn(stub, llm, -number - 1)
            samples = [await turn(stub, llm, number) for number in range(turns)]

    def row(label: str, key: str) -> list[str]:
        values = [s[key] for s in samples]
        return [label, f"{statistics.median(values):.2f} / {p(values, 0.95):.2f} ms"]

    body = "\n".join([
        f"{turns} agent turns, each of {STEPS} tool steps (retrieve_passages, read_note, note_links, read_note of a "
        "linked note) and an answer, from a scripted model on OpenAI's wire that answers at once, against the retrieve "
        "and chat services as processes over a generated 200-note vault. Per step, p50 / p95 over the turns:",
        "",
        table(["measure", "p50 / p95"], [
            row("the loop's own overhead per step (arguments, numbering, fitting, rendering, token counts)",
                "overhead"),
            row("the tools' wait on the retrieve service per step", "tools"),
            row("tool_call to tool_result as a client sees it (median step of a turn)", "event_gap"),
            row("the turn's own retrieval, before the loop", "retrieval"),
            row("a whole turn (5 model calls at no model time)", "turn"),
        ]),
    ])  # fmt: skip
    write_section("agent", "Agent mode: the tool loop's overhead", body)
    print(body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=30, help="agent turns measured (default 30)")
    asyncio.run(main(parser.parse_args().turns))
