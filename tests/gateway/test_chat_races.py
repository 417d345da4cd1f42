"""A chat turn raced by its own client over REST, through the real shim: the conversation deleted while the answer
streams, and a client whose socket closes at any moment of the turn."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import httpx2
import pytest

from secondbrain.chat.v1 import chat_service_pb2 as pb
from tests.chat.conftest import eventually
from tests.chat.test_turn_races import AT_ONCE, ROUNDS, SLOW, spread
from tests.gateway.conftest import Gateway, parse_sse

QUESTION = "How often do I water the tomatoes?"


@pytest.fixture
async def racing(gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> Gateway:
    """Chat with no per-client limit on questions (every round here is the same client), and the shim in front of
    it; Envoy is not needed to drop a socket."""
    monkeypatch.setenv("SECONDBRAIN_CHAT_MESSAGES_PER_MINUTE", "0")
    await gateway.chat.start_chat()
    await gateway.start(envoy=False)
    gateway.chat.llm.script.default = SLOW
    return gateway


async def in_batches(rounds: list[Callable[[], Awaitable[None]]], at_once: int = AT_ONCE) -> None:
    for start in range(0, len(rounds), at_once):
        await asyncio.gather(*(one() for one in rounds[start : start + at_once]))


async def post_question(
    client: httpx2.AsyncClient, conversation_id: str, deltas_seen: asyncio.Event, deltas: int
) -> tuple[int, str]:
    """POST the question and read its stream to the end; `deltas_seen` is set once `deltas` deltas arrived."""
    body = ""
    async with client.stream(
        "POST", f"/api/chat/conversations/{conversation_id}/messages", json={"content": QUESTION}
    ) as response:
        async for chunk in response.aiter_text():
            body += chunk
            if deltas and body.count("event: delta") >= deltas:
                deltas_seen.set()
    return response.status_code, body


async def test_deleting_a_conversation_while_its_answer_streams_is_never_a_500(racing: Gateway) -> None:
    client = racing.client(racing.shim_url)
    rounds = 2 * ROUNDS  # the deadlock needed a delete within a ms of the answer's store: more tries, more often
    failures: list[str] = []

    def round_after(delay: float, deltas: int) -> Callable[[], Awaitable[None]]:
        async def one() -> None:
            conversation_id = (await client.post("/api/chat/conversations", json={})).json()["conversation"]["id"]
            streaming = asyncio.Event()
            turn = asyncio.create_task(post_question(client, conversation_id, streaming, deltas))
            if deltas:
                await asyncio.wait_for(streaming.wait(), timeout=20)
            await asyncio.sleep(delay)
            deleted = await client.delete(f"/api/chat/conversations/{conversation_id}")
            if deleted.status_code != 200:
                failures.append(f"DELETE after {delay * 1000:.0f} ms: {deleted.status_code} {deleted.text}")
            status, body = await turn
            # A delete that lands while the answer streams ends the stream NOT_FOUND (the turn stops): intended.
            events = parse_sse(body) if status == 200 else []
            errors = [event.data for event in events if event.event == "error" and event.data["code"] != "NOT_FOUND"]
            if status not in (200, 404) or errors:
                failures.append(f"POST with DELETE after {delay * 1000:.0f} ms: {status} {errors or body}")
            gone = await client.get(f"/api/chat/conversations/{conversation_id}")
            if gone.status_code != 404:
                failures.append(f"after DELETE after {delay * 1000:.0f} ms the conversation is {gone.status_code}")

        return one

    # Half the deletes at a time after the POST; half from the next-to-last delta on, a ms apart, across the moment
    # the answer is stored (where the deadlock was): the shim's hop makes the last delta arrive too late for it.
    timed = [round_after(delay, 0) for delay in spread(rounds // 2, 0.25)]
    on_delta = [round_after(0.001 * (i % 30), len(SLOW.deltas) - 1) for i in range(rounds // 2)]
    await in_batches([one for pair in zip(timed, on_delta, strict=True) for one in pair], at_once=10)

    assert not failures, failures


async def test_a_client_whose_socket_closes_at_any_moment_leaves_a_final_answer(racing: Gateway) -> None:
    client = racing.client(racing.shim_url)
    outcomes: dict[str, int] = {}
    failures: list[str] = []

    def round_after(delay: float) -> Callable[[], Awaitable[None]]:
        async def one() -> None:
            conversation_id = (await client.post("/api/chat/conversations", json={})).json()["conversation"]["id"]
            turn = asyncio.create_task(post_question(client, conversation_id, asyncio.Event(), 0))
            await asyncio.sleep(delay)
            turn.cancel()  # httpx closes the connection: the socket goes with it
            await asyncio.gather(turn, return_exceptions=True)

            async def settled() -> tuple[list[pb.Message]] | None:
                messages = list((await racing.chat.get(conversation_id)).messages)
                return (messages,) if all(m.status != pb.MESSAGE_STATUS_PENDING for m in messages) else None

            try:
                (messages,) = await eventually(settled, within=10.0)
            except AssertionError:
                failures.append(f"left after {delay * 1000:.0f} ms: the answer is still pending")
                return
            if not messages:
                outcomes["nothing stored"] = outcomes.get("nothing stored", 0) + 1
            elif messages[1].status == pb.MESSAGE_STATUS_COMPLETE:
                outcomes["complete"] = outcomes.get("complete", 0) + 1
            elif "cancelled" in messages[1].error:
                outcomes["cancelled"] = outcomes.get("cancelled", 0) + 1
            else:
                failures.append(f"left after {delay * 1000:.0f} ms: {messages[1].error!r}")

        return one

    await in_batches([round_after(delay) for delay in spread(ROUNDS, 0.3)])

    assert not failures, failures
    assert outcomes.get("cancelled", 0) > 0, outcomes
