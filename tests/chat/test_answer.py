"""Answer through gRPC: a turn for a caller that keeps its own conversation (the OpenAI-compatible endpoint). The
same events as SendMessage, the caller's history reaching the model and retrieval, a chosen provider and model, and
nothing stored."""

from __future__ import annotations

import grpc
import pytest

from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.v1 import retrieval_pb2 as common
from tests.chat.conftest import ChatStack, eventually, kinds, text_of
from tests.wire import Reply

QUESTION = "How often do I water the tomatoes?"
USER, ASSISTANT = common.MESSAGE_ROLE_USER, common.MESSAGE_ROLE_ASSISTANT


async def answer(stack: ChatStack, request: pb.AnswerRequest) -> list[pb.AnswerResponse]:
    return [event async for event in stack.stub.Answer(request, timeout=30)]


async def conversations(stack: ChatStack) -> int:
    return len((await stack.stub.ListConversations(pb.ListConversationsRequest(), timeout=10)).conversations)


async def test_an_answer_streams_like_a_turn_with_the_callers_history_and_stores_nothing(stack: ChatStack) -> None:
    await stack.configure(retrieve={"condense": True})
    before = await conversations(stack)
    stack.llm.script.push(Reply(deltas=["Less than ", "the tomatoes [1]."], usage=(200, 7)))
    # Retrieve's condensing LLM is the embedding server here: it rewrites the follow-up using the history.
    stack.embedder.script.push(Reply(deltas=['{"query": "how much water does the basil need", "alternates": []}']))
    history = [
        common.HistoryMessage(role=USER, content=QUESTION),
        common.HistoryMessage(role=ASSISTANT, content="Every morning before nine [1]."),
    ]
    events = await answer(stack, pb.AnswerRequest(content="And the basil?", history=history))

    assert kinds(events) == ["sources", "delta", "delta", "done"]
    sources, done = events[0].sources, events[-1].done
    assert sources.user_message_id == "" and done.message_id == ""
    assert sources.retrieval.passages[0].note_path == "Projects/Garden.md"
    assert text_of(events) == "Less than the tomatoes [1]."
    assert (done.provider, done.model, done.usage.output_tokens) == ("openai", "gpt-5.4-mini", 7)
    messages = stack.answer_requests()[-1].json["messages"][1:]
    assert messages == [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "Every morning before nine [1]."},
        {"role": "user", "content": "And the basil?"},
    ]
    condense = [r for r in stack.embedder.requests if r.path.endswith("/chat/completions")][-1].json
    assert QUESTION in " ".join(str(m["content"]) for m in condense["messages"]), "retrieval was given the history"
    assert [q.text for q in sources.retrieval.plan.queries] == ["how much water does the basil need"]
    assert await conversations(stack) == before, "nothing is stored"


async def test_an_answer_may_name_its_provider_and_model(stack: ChatStack) -> None:
    stack.claude.script.push(Reply(deltas=["Every morning [1]."]))
    events = await answer(stack, pb.AnswerRequest(content=QUESTION, provider="anthropic"))
    assert kinds(events)[-1] == "done" and events[-1].done.provider == "anthropic"
    assert stack.answer_requests(stack.claude), "the Anthropic server answered"


@pytest.mark.parametrize(
    ("request_", "words"),
    [
        (pb.AnswerRequest(content=""), "empty"),
        (pb.AnswerRequest(content=QUESTION, provider="nobody"), "unknown provider 'nobody'"),
        (pb.AnswerRequest(content=QUESTION, provider="openai", model="gpt-0"), "gpt-0"),
        (
            pb.AnswerRequest(content=QUESTION, history=[common.HistoryMessage(content="who wrote this?")]),
            "history[0].role must be MESSAGE_ROLE_USER or MESSAGE_ROLE_ASSISTANT",
        ),
    ],
)
async def test_a_bad_answer_request_is_refused_with_a_status(
    stack: ChatStack, request_: pb.AnswerRequest, words: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await answer(stack, request_)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert words in (refused.value.details() or "")


async def test_a_client_cancel_stops_the_upstream_request(stack: ChatStack) -> None:
    stack.llm.script.push(Reply(deltas=[f"word{i} " for i in range(40)], delay=0.1))
    call = stack.stub.Answer(pb.AnswerRequest(content=QUESTION))
    received = 0
    async for _ in call:
        received += 1
        if received == 3:
            break
    call.cancel()

    async def disconnected() -> bool:
        return stack.llm.disconnects == 1

    await eventually(disconnected)
