"""A turn raced by its own client: the conversation deleted while the answer streams, and a client that leaves at
any moment of the turn. Each round is independent, so rounds run a few at a time to keep the test short."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import grpc
import pytest

from secondbrain.chat.v1 import chat_service_pb2 as pb
from tests.chat.conftest import ChatStack, eventually
from tests.wire import Reply

QUESTION = "How often do I water the tomatoes?"
ROUNDS = 50
AT_ONCE = 5
# A slow stream, so a delete or a cancel can land before, during and after it.
SLOW = Reply(deltas=["word "] * 6, delay=0.02)


def spread(rounds: int, longest: float) -> list[float]:
    """`rounds` delays from 0 to `longest` seconds, the first few within a few ms, interleaved so each batch of
    rounds run at once covers the whole range."""
    first = [0.0, 0.001, 0.002, 0.004, 0.008]
    rest = [longest * i / (rounds - len(first)) for i in range(1, rounds - len(first) + 1)]
    delays = first + rest
    return [delays[(i * 7) % rounds] for i in range(rounds)]  # 7 is coprime with 50: a permutation


@pytest.fixture
async def racing(stack: ChatStack, monkeypatch: pytest.MonkeyPatch) -> ChatStack:
    """The chat stack with no per-client limit on questions: every round here is the same client."""
    monkeypatch.setenv("SECONDBRAIN_CHAT_MESSAGES_PER_MINUTE", "0")
    await stack.start_chat()
    return stack


async def in_batches(rounds: list[Callable[[], Awaitable[None]]], at_once: int = AT_ONCE) -> None:
    for start in range(0, len(rounds), at_once):
        await asyncio.gather(*(one() for one in rounds[start : start + at_once]))


async def drain(
    call: grpc.aio.UnaryStreamCall, deltas_seen: asyncio.Event | None = None, deltas: int = 0
) -> list[pb.SendMessageResponse] | grpc.aio.AioRpcError:
    """The call's events; `deltas_seen` is set once `deltas` deltas have arrived. A cancelled call gives what
    arrived before the cancel."""
    events: list[pb.SendMessageResponse] = []
    try:
        async for event in call:
            events.append(event)
            if deltas_seen is not None and sum(e.WhichOneof("event") == "delta" for e in events) == deltas:
                deltas_seen.set()
    except grpc.aio.AioRpcError as error:
        return error
    except asyncio.CancelledError:
        if not call.cancelled():
            raise
    return events


async def test_deleting_a_conversation_while_its_answer_streams_always_deletes_it(racing: ChatStack) -> None:
    stack = racing
    stack.llm.script.default = SLOW
    rounds = 2 * ROUNDS  # the deadlock needed a delete within a ms of the answer's store: more tries, more often
    delays = spread(rounds // 2, 0.25)
    failures: list[str] = []

    def round_after(delay: float, deltas: int) -> Callable[[], Awaitable[None]]:
        async def one() -> None:
            conversation_id = (await stack.conversation()).id
            call = stack.stub.SendMessage(pb.SendMessageRequest(conversation_id=conversation_id, content=QUESTION))
            streaming = asyncio.Event()
            turn = asyncio.create_task(drain(call, streaming, deltas))
            if deltas:  # the moment the answer is stored is when the deadlock was: right after its last delta
                await asyncio.wait_for(streaming.wait(), timeout=20)
            await asyncio.sleep(delay)
            try:
                await stack.stub.DeleteConversation(pb.DeleteConversationRequest(id=conversation_id), timeout=20)
            except grpc.aio.AioRpcError as error:
                failures.append(f"delete after {delay * 1000:.0f} ms: {error.code().name} {error.details()}")
            outcome = await turn
            if isinstance(outcome, grpc.aio.AioRpcError) and outcome.code() != grpc.StatusCode.NOT_FOUND:
                failures.append(f"turn with delete after {delay * 1000:.0f} ms: {outcome.code().name}")
            elif not isinstance(outcome, grpc.aio.AioRpcError) and outcome[-1].WhichOneof("event") == "error":
                failures.append(f"turn with delete after {delay * 1000:.0f} ms: {outcome[-1].error.message}")

        return one

    # Half the deletes at a time after the request; half just after the last delta arrives, when the answer is
    # being stored (where the deadlock was), a few ms apart.
    timed = [round_after(delay, 0) for delay in delays]
    on_delta = [round_after(0.001 * (i % 5), len(SLOW.deltas)) for i in range(rounds // 2)]
    await in_batches([one for pair in zip(timed, on_delta, strict=True) for one in pair], at_once=10)

    assert not failures, failures
    async with stack.db.pool.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM chat_conversations") == 0
        assert await connection.fetchval("SELECT count(*) FROM chat_messages") == 0


async def test_a_client_that_leaves_at_any_moment_leaves_the_turns_true_outcome(racing: ChatStack) -> None:
    stack = racing
    stack.llm.script.default = SLOW
    delays = spread(ROUNDS, 0.3)
    outcomes: dict[str, int] = {}
    failures: list[str] = []

    def round_after(delay: float) -> Callable[[], Awaitable[None]]:
        async def one() -> None:
            conversation_id = (await stack.conversation()).id
            call = stack.stub.SendMessage(pb.SendMessageRequest(conversation_id=conversation_id, content=QUESTION))
            turn = asyncio.create_task(drain(call))
            await asyncio.sleep(delay)
            call.cancel()
            await turn

            async def settled() -> tuple[list[pb.Message]] | None:
                messages = list((await stack.get(conversation_id)).messages)
                return (messages,) if all(m.status != pb.MESSAGE_STATUS_PENDING for m in messages) else None

            try:
                (messages,) = await eventually(settled, within=5.0)
            except AssertionError:
                failures.append(f"left after {delay * 1000:.0f} ms: the answer is still pending")
                return
            if not messages:  # the client left before its question was stored: nothing to say
                outcomes["nothing stored"] = outcomes.get("nothing stored", 0) + 1
                return
            user, answer = messages
            assert user.content == QUESTION
            if answer.status == pb.MESSAGE_STATUS_COMPLETE:
                outcomes["complete"] = outcomes.get("complete", 0) + 1
                assert answer.content == "word " * 6
            elif "cancelled" in answer.error:
                outcomes["cancelled"] = outcomes.get("cancelled", 0) + 1
            else:
                failures.append(f"left after {delay * 1000:.0f} ms: {answer.error!r}")

        return one

    await in_batches([round_after(delay) for delay in delays])

    assert not failures, failures
    assert outcomes.get("cancelled", 0) > 0, outcomes
