"""The OpenAI-compatible chat API through the real Envoy, with the official `openai` SDK as a chat front end uses it:
models listed, an answer streamed and not, with its `[n]` markers and sources, the caller's history reaching the
model, nothing stored unless a conversation is named, OpenAI's error shape, and the token asked for."""

from __future__ import annotations

import json
import logging
from typing import Any

import openai
import pytest

from secondbrain.chat.v1 import chat_service_pb2 as pb
from tests.gateway.conftest import Gateway
from tests.gateway.test_auth import TOKEN, guarded  # noqa: F401 - the fixture these tests use
from tests.wire import Reply
from tests.wire.script import ToolCall

QUESTION = "How often do I water the tomatoes?"


def client(gateway: Gateway, key: str = TOKEN) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{gateway.envoy_url}/v1", api_key=key, max_retries=0, timeout=30)


async def stored_conversations(gateway: Gateway) -> int:
    listed = await gateway.chat.stub.ListConversations(pb.ListConversationsRequest(), timeout=10)
    return len(listed.conversations)


async def test_models_list_the_default_and_every_available_model(guarded: Gateway) -> None:  # noqa: F811
    ids = [model.id async for model in client(guarded).models.list()]
    assert ids[0] == "secondbrain" and "openai/gpt-5.4-mini" in ids


async def test_an_answer_not_streamed_cites_its_sources_and_stores_nothing(guarded: Gateway) -> None:  # noqa: F811
    before = await stored_conversations(guarded)
    guarded.chat.llm.script.push(Reply(deltas=["Every morning ", "before nine [1]."], usage=(120, 8)))
    completion = await client(guarded).chat.completions.create(
        model="secondbrain",
        messages=[
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Where are the tomatoes?"},
            {"role": "assistant", "content": "In bed A [1]."},
            {"role": "user", "content": QUESTION},
        ],
    )
    text = completion.choices[0].message.content or ""
    assert text.startswith("Every morning before nine [1].\n\nSources:\n- [1] Projects/Garden.md")
    assert completion.choices[0].finish_reason == "stop" and completion.usage and completion.usage.total_tokens == 128
    sources = (completion.model_extra or {})["secondbrain"]["sources"]
    assert [(s["number"], s["path"]) for s in sources] == [(1, "Projects/Garden.md")]
    sent = guarded.chat.answer_requests()[-1].json["messages"][1:]
    assert sent == [
        {"role": "user", "content": "Where are the tomatoes?"},
        {"role": "assistant", "content": "In bed A [1]."},
        {"role": "user", "content": QUESTION},
    ], "the history reached the model; the caller's system message did not replace ours"
    assert await stored_conversations(guarded) == before


async def test_an_answer_streams_in_chunks_ending_with_its_sources(guarded: Gateway) -> None:  # noqa: F811
    guarded.chat.llm.script.push(Reply(deltas=["Every morning ", "[1]."]))
    stream = await client(guarded).chat.completions.create(
        model="openai/gpt-5.4-mini", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    pieces, last = [], None
    async for chunk in stream:
        pieces.append(chunk.choices[0].delta.content or "")
        last = chunk
    text = "".join(pieces)
    assert text.startswith("Every morning [1].\n\nSources:\n- [1] Projects/Garden.md"), text
    assert last is not None and last.choices[0].finish_reason == "stop"
    assert (last.model_extra or {})["secondbrain"]["sources"][0]["path"] == "Projects/Garden.md"


async def test_a_stream_asked_for_its_usage_ends_with_a_usage_chunk(guarded: Gateway) -> None:  # noqa: F811
    # Open WebUI asks for it; it was ignored.
    guarded.chat.llm.script.push(Reply(deltas=["Every morning ", "[1]."]))
    stream = await client(guarded).chat.completions.create(
        model="openai/gpt-5.4-mini",
        messages=[{"role": "user", "content": QUESTION}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == chunks[-1].usage.prompt_tokens + chunks[-1].usage.completion_tokens > 0


async def test_an_unknown_model_is_openais_404_naming_the_models_listed(guarded: Gateway) -> None:  # noqa: F811
    sdk = client(guarded)
    listed = [model.id async for model in sdk.models.list()]
    with pytest.raises(openai.NotFoundError) as missing:
        await sdk.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    error = missing.value.body
    assert isinstance(error, dict) and error["code"] == "model_not_found"
    # The ids /v1/models lists, in its words (not the chat service's provider names).
    assert all(model_id in error["message"] for model_id in listed) and "'gpt-4o'" in error["message"]


async def test_a_named_conversation_keeps_the_turn(guarded: Gateway) -> None:  # noqa: F811
    conversation = await guarded.chat.conversation()
    guarded.chat.llm.script.push(Reply(deltas=["Every morning [1]."]))
    await client(guarded).chat.completions.create(
        model="secondbrain",
        messages=[{"role": "user", "content": QUESTION}],
        extra_headers={"X-Secondbrain-Conversation": conversation.id},
    )
    stored = await guarded.chat.get(conversation.id)
    assert [m.content for m in stored.messages] == [QUESTION, "Every morning [1]."]


async def test_errors_have_openais_shape_and_our_words(guarded: Gateway) -> None:  # noqa: F811
    with pytest.raises(openai.NotFoundError) as unknown:
        await client(guarded).chat.completions.create(
            model="nobody/nothing", messages=[{"role": "user", "content": QUESTION}]
        )
    assert "the model 'nobody/nothing' does not exist here" in unknown.value.message
    with pytest.raises(openai.BadRequestError) as no_question:
        await client(guarded).chat.completions.create(
            model="secondbrain", messages=[{"role": "assistant", "content": "Hello"}]
        )
    assert "the last message must be the user's question" in no_question.value.message
    with pytest.raises(openai.AuthenticationError) as refused:
        await client(guarded, key="wrong-key-0123456789").models.list()
    assert refused.value.status_code == 401 and isinstance(refused.value.body, dict)
    assert refused.value.body["type"] == "authentication_error", "the SDK found OpenAI's error shape"


# A lone surrogate in each string field /v1 reads: JSON can escape half a UTF-16 pair on its own, which no UTF-8
# encoder on the way (protobuf, gRPC, the JSON response) accepts (issue 32).
LONE = "\ud800"
ALONE_IN = {
    "the question": {"messages": [{"role": "user", "content": f"Water {LONE}?"}]},
    "the history": {
        "messages": [{"role": "user", "content": f"Hi {LONE}"}, {"role": "user", "content": QUESTION}],
    },
    "the assistant's history": {
        "messages": [{"role": "assistant", "content": LONE}, {"role": "user", "content": QUESTION}],
    },
    "the model": {"model": f"openai/{LONE}", "messages": [{"role": "user", "content": QUESTION}]},
    "a content part": {"messages": [{"role": "user", "content": [{"type": "text", "text": LONE}]}]},
    "a content part's type": {"messages": [{"role": "user", "content": [{"type": LONE, "text": QUESTION}]}]},
    "a knob": {"messages": [{"role": "user", "content": QUESTION}], "user": LONE},
    "a field name": {"messages": [{"role": "user", "content": QUESTION, LONE: 1}]},
}


async def test_a_lone_surrogate_anywhere_is_a_400_saying_so(
    guarded: Gateway,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    conversation = await guarded.chat.conversation()
    answered = len(guarded.chat.answer_requests())
    http = guarded.client(guarded.envoy_url, authorization=f"Bearer {TOKEN}")

    async def refused(body: dict[str, Any], **headers: str) -> str:
        # Sent as raw bytes: the SDK (and httpx's json=) cannot encode such text at all.
        content = json.dumps({"model": "secondbrain", **body}).encode()
        response = await http.post("/v1/chat/completions", content=content, headers=headers)
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error", error
        assert "is not valid Unicode text: it contains a lone surrogate (\\ud800" in error["message"], error
        return str(error["message"])

    for where, body in ALONE_IN.items():
        message = await refused(body)
        assert " in the request body " in message, (where, message)
    assert (await refused(ALONE_IN["the question"])).startswith("messages.0.content in the request body")
    assert (await refused(ALONE_IN["a content part"])).startswith("messages.0.content.0.text in the request body")
    assert (await refused(ALONE_IN["the model"])).startswith("model in the request body")
    named = {"X-Secondbrain-Conversation": conversation.id}
    for body in (ALONE_IN["the question"], ALONE_IN["the model"]):
        await refused(body, **named)
    assert len(guarded.chat.answer_requests()) == answered, "no model was asked"
    assert list((await guarded.chat.get(conversation.id)).messages) == [], "the named conversation kept nothing"
    rest = await http.post(f"/api/chat/conversations/{conversation.id}/messages", content=b'{"content": "\\ud800"}')
    assert rest.status_code == 400 and rest.json()["error"]["message"].startswith("content in the request body is")
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert errors == [], [r.getMessage() for r in errors]


async def test_a_value_too_long_or_of_the_wrong_type_is_a_400_before_any_call(guarded: Gateway) -> None:  # noqa: F811
    answered = len(guarded.chat.answer_requests())
    http = guarded.client(guarded.envoy_url, authorization=f"Bearer {TOKEN}")
    question = [{"role": "user", "content": "What did we decide about the worktop?"}]

    async def refused(body: dict[str, Any], says: str, **headers: str) -> None:
        response = await http.post("/v1/chat/completions", json={"messages": question, **body}, headers=headers)
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error" and says in error["message"], error

    # Not a 429 (a service's error echoing the value was too large a gRPC status), which OpenAI's SDKs retry.
    await refused({"model": "m" * 10_000}, "model: String should have at most 200 characters")
    await refused({}, "a conversation id is a UUID", **{"X-Secondbrain-Conversation": "c" * 60_000})
    await refused({}, "write the moment as ISO 8601", **{"X-Secondbrain-Now": "2" * 10_000})
    # OpenAI takes a boolean only.
    for lax in ("yes", 1, "true"):
        await refused({"stream": lax}, "stream: Input should be a valid boolean")
    assert len(guarded.chat.answer_requests()) == answered, "no model was asked"


async def test_in_agent_mode_a_passage_a_tool_added_is_among_the_sources(guarded: Gateway) -> None:  # noqa: F811
    """With the settings in agent mode, the model's lookups happen behind the endpoint: a passage a tool added may be
    cited, and it is listed with the others."""
    await guarded.chat.stub.UpdateSettings(
        pb.UpdateSettingsRequest(
            settings=pb.Settings(mode="agent", passages=1), update_mask={"paths": ["mode", "passages"]}
        ),
        timeout=10,
    )
    guarded.chat.llm.script.push(
        Reply(deltas=[], tool_calls=[ToolCall("read_note", {"path": "Recipes/Bread.md"}, id="call_bread")]),
        Reply(deltas=["Fed twice a day [2]."]),
    )
    completion = await client(guarded).chat.completions.create(
        model="secondbrain", messages=[{"role": "user", "content": "How often is the sourdough starter fed?"}]
    )
    text = completion.choices[0].message.content or ""
    assert text.startswith("Fed twice a day [2].\n\nSources:\n- [2] Recipes/Bread.md, lines 1-3"), text
    sources = (completion.model_extra or {})["secondbrain"]["sources"]
    assert [s["number"] for s in sources] == [2]


async def test_last_week_is_read_against_the_askers_now_header(guarded: Gateway) -> None:  # noqa: F811
    guarded.chat.write("Journal/2026-11-10.md", "# 10 November\n\nWe decided on a quartz worktop for the kitchen.\n")
    guarded.chat.write("Journal/2026-11-25.md", "# 25 November\n\nWe decided on an oak worktop for the kitchen.\n")
    await guarded.chat.ingest()
    guarded.chat.llm.script.push(Reply(deltas=["Oak [1]."]))
    completion = await client(guarded).chat.completions.create(
        model="secondbrain",
        messages=[{"role": "user", "content": "What did we decide about the worktop last week?"}],
        extra_headers={"X-Secondbrain-Now": "2026-11-30T18:00:00+00:00"},
    )
    paths = [source["path"] for source in (completion.model_extra or {})["secondbrain"]["sources"]]
    assert paths[0] == "Journal/2026-11-25.md" and "Journal/2026-11-10.md" not in paths, paths
    system = guarded.chat.answer_requests()[-1].json["messages"][0]["content"]
    assert "dated 2026-11-25" in system

    # A moment that is not one is a 400 saying how to write it, before any model is asked.
    answered = len(guarded.chat.answer_requests())
    with pytest.raises(openai.BadRequestError) as refused:
        await client(guarded).chat.completions.create(
            model="secondbrain",
            messages=[{"role": "user", "content": "What did we decide last week?"}],
            extra_headers={"X-Secondbrain-Now": "yesterday"},
        )
    assert "ISO 8601 with its UTC offset" in str(refused.value) and len(guarded.chat.answer_requests()) == answered
