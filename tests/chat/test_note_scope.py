"""A turn kept to some notes ("ask about this note": the note and the notes it links to), through the real chat and
retrieve services: the notes filter reaches retrieval, and a bad one is refused before anything is stored."""

from __future__ import annotations

import grpc
import pytest

from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.v1 import retrieval_pb2 as common
from tests.chat.conftest import ChatStack
from tests.wire import Reply


async def test_a_turn_about_one_note_retrieves_from_that_note_alone(stack: ChatStack) -> None:
    question = "How much water do the tomatoes and the sourdough starter need?"
    stack.llm.script.push(Reply(deltas=["Every morning [1]."]))
    everywhere = pb.AnswerRequest(content=question)
    events = [event async for event in stack.stub.Answer(everywhere, timeout=60)]
    assert {p.note_path for p in events[0].sources.retrieval.passages} >= {"Projects/Garden.md", "Recipes/Bread.md"}

    stack.llm.script.push(Reply(deltas=["Every morning [1]."]))
    scoped = pb.AnswerRequest(content=question, filters=common.RetrievalFilters(notes=["Projects/Garden.md"]))
    events = [event async for event in stack.stub.Answer(scoped, timeout=60)]
    retrieval = events[0].sources.retrieval
    assert {p.note_path for p in retrieval.passages} == {"Projects/Garden.md"}
    assert list(retrieval.plan.filters.notes) == ["Projects/Garden.md"]


async def test_a_notes_filter_that_names_no_note_path_is_refused_before_the_turn(stack: ChatStack) -> None:
    conversation = await stack.conversation()
    request = pb.SendMessageRequest(
        conversation_id=conversation.id, content="Water?", filters=common.RetrievalFilters(notes=["../outside.md"])
    )
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        async for _ in stack.stub.SendMessage(request, timeout=30):
            pass
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "no '..'" in (refused.value.details() or "")
    assert (await stack.get(conversation.id)).message_count == 0, "nothing stored"
