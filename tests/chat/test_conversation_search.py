"""Searching the conversations (ListConversations `query`) through gRPC: every word, in a title or any message,
without case; pages go on with the same query; a query too long is refused."""

from __future__ import annotations

import grpc
import pytest

from secondbrain.chat.v1 import chat_service_pb2 as pb
from tests.chat.conftest import ChatStack
from tests.wire import Reply


async def search(stack: ChatStack, query: str, size: int = 0, token: str = "") -> pb.ListConversationsResponse:
    request = pb.ListConversationsRequest(query=query, page_size=size, page_token=token)
    return await stack.stub.ListConversations(request, timeout=10)


async def found(stack: ChatStack, query: str) -> list[str]:
    return [conversation.id for conversation in (await search(stack, query)).conversations]


async def test_a_query_finds_the_conversations_holding_all_its_words(stack: ChatStack) -> None:
    watering = await stack.conversation(title="Watering plan")
    stack.llm.script.push(Reply(deltas=["Every morning before nine [1]."]))
    await stack.send(watering.id, "How often do I water the tomatoes?")
    stack.llm.script.push(Reply(deltas=["The trip is booked for May [1]."]))
    lisbon, _ = await stack.ask("When is the Lisbon trip?")
    bread = await stack.conversation(title="Sourdough 100% rye_flour")

    assert await found(stack, "lisbon") == [lisbon], "a question's words, whatever their case"
    assert await found(stack, "BOOKED for") == [lisbon], "an answer's words, all of them"
    assert await found(stack, "watering") == [watering.id], "a title's"
    assert await found(stack, "tomato") == [watering.id], "part of a word"
    assert await found(stack, "lisbon tomatoes") == [], "every word must be there"
    assert set(await found(stack, "the")) == {watering.id, lisbon}
    # LIKE's own characters are letters like any other.
    assert await found(stack, "100%") == [bread.id]
    assert await found(stack, "rye_flour") == [bread.id]
    assert await found(stack, "%") == [bread.id] and await found(stack, "_") == [bread.id]
    assert len(await found(stack, "   ")) == 3, "blank lists them all"


async def test_pages_of_a_search_go_on_with_the_same_query(stack: ChatStack) -> None:
    matching = [(await stack.conversation(title=f"Compost heap {i}")).id for i in range(5)]
    await stack.conversation(title="Something else")
    seen: list[str] = []
    token = ""
    while True:
        reply = await search(stack, "compost", size=2, token=token)
        seen += [c.id for c in reply.conversations]
        token = reply.next_page_token
        if not token:
            break
    assert seen == list(reversed(matching)), "newest first, none repeated or skipped"


@pytest.mark.parametrize(
    ("query", "says"),
    [("x" * 201, "201 characters long"), (" ".join(f"w{i}" for i in range(11)), "11 words")],
)
async def test_a_query_too_long_is_invalid(stack: ChatStack, query: str, says: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await search(stack, query)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert says in raised.value.details()
