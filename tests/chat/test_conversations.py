"""Conversations through gRPC: newest-first keyset pages, create with the settings' persona, rename, delete."""

from __future__ import annotations

import grpc
import pytest

from secondbrain.chat.v1 import chat_service_pb2 as pb
from tests.chat.conftest import ChatStack


async def page(stack: ChatStack, size: int, token: str = "") -> pb.ListConversationsResponse:
    return await stack.stub.ListConversations(pb.ListConversationsRequest(page_size=size, page_token=token), timeout=10)


async def test_conversations_are_listed_newest_first_in_pages(stack: ChatStack) -> None:
    created = [(await stack.conversation(title=f"Conversation {i}")).id for i in range(5)]
    # A message moves its conversation to the top.
    await stack.send(created[1], "How often do I water the tomatoes?")
    expected = [created[1], created[4], created[3], created[2], created[0]]

    seen: list[str] = []
    token = ""
    sizes = []
    while True:
        reply = await page(stack, 2, token)
        seen += [c.id for c in reply.conversations]
        sizes.append(len(reply.conversations))
        token = reply.next_page_token
        if not token:
            break
    assert seen == expected and sizes == [2, 2, 1]
    first = (await page(stack, 0)).conversations
    assert [c.id for c in first] == expected
    assert first[0].message_count == 2 and not first[0].messages, "a list carries no messages"

    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await page(stack, 2, "not-a-token")
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "page_token" in raised.value.details()


async def test_a_conversation_takes_the_settings_persona_and_can_be_renamed(stack: ChatStack) -> None:
    await stack.stub.UpdateSettings(
        pb.UpdateSettingsRequest(settings=pb.Settings(persona_id="gardener"), update_mask={"paths": ["persona_id"]}),
        timeout=10,
    )
    conversation = await stack.conversation()
    assert conversation.persona_id == "gardener" and conversation.title == ""

    reply = await stack.stub.UpdateConversation(
        pb.UpdateConversationRequest(id=conversation.id, title="  Watering   plan ", update_mask={"paths": ["title"]}),
        timeout=10,
    )
    assert reply.conversation.title == "Watering plan" and reply.conversation.persona_id == "gardener"
    reply = await stack.stub.UpdateConversation(
        pb.UpdateConversationRequest(id=conversation.id, persona_id="", update_mask={"paths": ["persona_id"]}),
        timeout=10,
    )
    assert reply.conversation.persona_id == "" and reply.conversation.title == "Watering plan"
    # A titled conversation keeps its title when its first question arrives.
    await stack.send(conversation.id, "How often do I water the tomatoes?")
    assert (await stack.get(conversation.id)).title == "Watering plan"

    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stack.stub.UpdateConversation(
            pb.UpdateConversationRequest(id=conversation.id, persona_id="pirate"), timeout=10
        )
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "gardener" in raised.value.details()


async def test_deleting_a_conversation_deletes_its_messages(stack: ChatStack) -> None:
    conversation_id, _ = await stack.ask("How often do I water the tomatoes?")
    other_id, _ = await stack.ask("When is the Lisbon trip?")
    await stack.stub.DeleteConversation(pb.DeleteConversationRequest(id=conversation_id), timeout=10)

    for call in (
        stack.get(conversation_id),
        stack.stub.DeleteConversation(pb.DeleteConversationRequest(id=conversation_id), timeout=10),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await call
        assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    async with stack.db.pool.acquire() as connection:
        left = await connection.fetch("SELECT DISTINCT conversation_id::text AS id FROM chat_messages")
    assert [row["id"] for row in left] == [other_id]
    assert [c.id for c in (await page(stack, 0)).conversations] == [other_id]


async def test_a_long_first_question_gives_a_short_title(stack: ChatStack) -> None:
    question = "How often do I water the tomatoes " + "and the basil and the beans " * 5 + "?\nSecond line."
    conversation_id, _ = await stack.ask(question)
    title = (await stack.get(conversation_id)).title
    assert title.startswith("How often do I water the tomatoes") and title.endswith("…") and len(title) <= 60
