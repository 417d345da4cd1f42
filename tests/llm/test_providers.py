"""Every vendor through its real SDK against a local server that speaks its wire protocol.

Streams arrive as ordered deltas and end with usage; failures part way raise instead of passing as a shorter
answer; a consumer that stops closes the upstream request; auth failures name the variable; keys never leak.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from secondbrain.errors import FailedPrecondition, InvalidInput, Unavailable
from secondbrain.llm import ChatMessage, ChatProvider, ChatRequest, ProviderCatalog, TextDelta, ToolSpec, Usage
from secondbrain.llm import ToolCall as LlmToolCall
from secondbrain.providers import RetryPolicy
from tests.wire import AnthropicServer, OpenAIServer, Reply, ToolCall, WireServer

SECRET = "sk-test-4f9a8b7c6d5e4f3a2b1c"
FAST_RETRY = RetryPolicy(attempts=3, deadline_seconds=5, base_delay_seconds=0.01, max_delay_seconds=0.05)

# provider id -> (the variable holding its key, the variable pointing it at our server, whether that URL ends in /v1)
VENDORS = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "together": ("TOGETHER_API_KEY", "TOGETHER_BASE_URL"),
    "openrouter": ("OPENROUTER_API_KEY", "OPENROUTER_BASE_URL"),
    "ollama": (None, "OLLAMA_URL"),
}


@dataclass
class Vendor:
    id: str
    server: WireServer
    provider: ChatProvider
    model: str


@pytest.fixture(params=sorted(VENDORS))
async def vendor(request: pytest.FixtureRequest) -> AsyncIterator[Vendor]:
    provider_id = request.param
    key_variable, url_variable = VENDORS[provider_id]
    server = AnthropicServer() if provider_id == "anthropic" else OpenAIServer()
    async with server:
        # Ollama's variable names the server root; the others name the API base the SDK expects.
        url = server.root_url if provider_id == "ollama" else server.base_url
        env = {url_variable: url, **({key_variable: SECRET} if key_variable else {})}
        catalog = ProviderCatalog.from_overrides({}, env, retry=FAST_RETRY)
        yield Vendor(provider_id, server, catalog.provider(provider_id), catalog.default().model)


def ask(vendor: Vendor, question: str = "What did I decide about storage?") -> ChatRequest:
    return ChatRequest(
        model=vendor.model, system="Answer from the passages.", messages=[ChatMessage("user", question)], max_tokens=300
    )


async def collect(provider: ChatProvider, request: ChatRequest) -> tuple[list[str], Usage]:
    deltas: list[str] = []
    usage = None
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            deltas.append(event.text)
        else:
            assert usage is None, "exactly one usage record, at the end"
            usage = event
    assert usage is not None
    return deltas, usage


async def test_streamed_answer_arrives_as_ordered_deltas_with_usage(vendor: Vendor) -> None:
    vendor.server.script.push(Reply(deltas=["We ", "chose ", "Postgres", " [1]."], usage=(321, 9)))
    deltas, usage = await collect(vendor.provider, ask(vendor))
    assert deltas == ["We ", "chose ", "Postgres", " [1]."]
    assert (usage.input_tokens, usage.output_tokens) == (321, 9)
    assert usage.model == vendor.model
    assert usage.stop_reason in ("end_turn", "stop")


async def test_request_carries_model_system_prompt_and_key(vendor: Vendor) -> None:
    await collect(vendor.provider, ask(vendor, "Where is the plan?"))
    [sent] = vendor.server.requests
    body = sent.json
    assert body["model"] == vendor.model and body["stream"] is True
    if vendor.id == "anthropic":
        assert body["system"] == "Answer from the passages."
        assert body["messages"] == [{"role": "user", "content": "Where is the plan?"}]
        assert body["max_tokens"] == 300
        assert SECRET in sent.headers.get("x-api-key", "") + sent.headers.get("authorization", "")
    else:
        assert body["messages"][0] == {"role": "system", "content": "Answer from the passages."}
        assert body["stream_options"] == {"include_usage": True}
        token_field = "max_completion_tokens" if vendor.id == "openai" else "max_tokens"
        assert body[token_field] == 300
        if vendor.id != "ollama":
            assert sent.headers["authorization"] == f"Bearer {SECRET}"


async def test_error_mid_stream_is_an_error_not_a_short_answer(vendor: Vendor) -> None:
    vendor.server.script.push(Reply(deltas=["We ", "chose ", "Postgres"], fail_after=2))
    seen: list[str] = []
    with pytest.raises(Unavailable, match="stopped part way"):
        async for event in vendor.provider.stream(ask(vendor)):
            if isinstance(event, TextDelta):
                seen.append(event.text)
    assert seen == ["We ", "chose "]
    assert len(vendor.server.requests) == 1, "a stream that already produced text is not retried"


async def test_dropped_connection_mid_stream_is_an_error(vendor: Vendor) -> None:
    vendor.server.script.push(Reply(deltas=["a", "b", "c"], drop_after=1))
    with pytest.raises(Unavailable, match="stopped part way"):
        await collect(vendor.provider, ask(vendor))


async def test_consumer_that_stops_closes_the_upstream_request(vendor: Vendor) -> None:
    vendor.server.script.push(Reply(deltas=[f"word{i} " for i in range(50)], delay=0.05))
    stream = vendor.provider.stream(ask(vendor))
    first = await anext(stream)
    assert isinstance(first, TextDelta)
    await stream.aclose()
    for _ in range(100):
        if vendor.server.disconnects == 1:
            break
        await asyncio.sleep(0.05)
    assert vendor.server.disconnects == 1


async def test_cancelled_task_closes_the_upstream_request(vendor: Vendor) -> None:
    vendor.server.script.push(Reply(deltas=[f"word{i} " for i in range(50)], delay=0.05))
    started = asyncio.Event()

    async def consume() -> None:
        async with contextlib.aclosing(vendor.provider.stream(ask(vendor))) as stream:
            async for _ in stream:
                started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    for _ in range(100):
        if vendor.server.disconnects == 1:
            break
        await asyncio.sleep(0.05)
    assert vendor.server.disconnects == 1


async def test_401_names_the_variable_to_fix_and_never_the_key(
    vendor: Vendor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    vendor.server.script.push(
        Reply(status=401, error_message=f"Incorrect API key provided: {SECRET[:12]}...{SECRET[-4:]}")
    )
    with pytest.raises(FailedPrecondition) as raised:
        await collect(vendor.provider, ask(vendor))
    key_variable = VENDORS[vendor.id][0]
    if key_variable:
        assert f"set {key_variable} to a valid key" in str(raised.value)
    assert SECRET[:12] not in str(raised.value)
    assert SECRET[:12] not in caplog.text
    assert len(vendor.server.requests) == 1, "a bad key is not retried"


async def test_rate_limit_is_retried_then_succeeds(vendor: Vendor) -> None:
    vendor.server.script.push(Reply(status=429, headers={"retry-after": "0"}), Reply(status=503))
    deltas, _ = await collect(vendor.provider, ask(vendor))
    assert "".join(deltas) == "Hello, world."
    assert len(vendor.server.requests) == 3


async def test_persistent_overload_surfaces_as_unavailable(vendor: Vendor) -> None:
    vendor.server.script.default = Reply(status=529 if vendor.id == "anthropic" else 503)
    with pytest.raises(Unavailable, match="gave up after 3 attempts"):
        await collect(vendor.provider, ask(vendor))
    assert len(vendor.server.requests) == FAST_RETRY.attempts


async def test_unknown_model_is_invalid_input_naming_it(vendor: Vendor) -> None:
    vendor.server.script.push(Reply(status=404, error_message="model not found"))
    with pytest.raises(InvalidInput, match=f"model '{vendor.model}'"):
        await collect(vendor.provider, ask(vendor))


async def test_unreachable_provider_is_unavailable() -> None:
    async with OpenAIServer() as server:
        url = server.base_url
    # The server is gone: nothing listens on its port any more.
    catalog = ProviderCatalog.from_overrides({}, {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": url}, retry=FAST_RETRY)
    with pytest.raises(Unavailable, match="cannot reach OpenAI") as raised:
        await collect(
            catalog.provider("openai"), ChatRequest(model="gpt-4.1-mini", messages=[ChatMessage("user", "hi")])
        )
    assert SECRET not in str(raised.value)


SEARCH_TOOL = ToolSpec("search_notes", "Find notes.", {"type": "object", "properties": {"query": {"type": "string"}}})


async def test_tool_calls_arrive_whole_after_the_text_and_results_go_back_in_the_vendors_shape(
    vendor: Vendor,
) -> None:
    """Native tool calling: the tools are offered in the vendor's shape, a call's arguments (streamed in pieces)
    arrive joined as one ToolCall after the text, and the next request carries the call and its result back."""
    calls = [ToolCall("search_notes", {"query": "worktop"}, id="call_a"), ToolCall("read_note", {}, id="call_b")]
    vendor.server.script.push(Reply(deltas=["Let me look."], tool_calls=calls))
    request = ChatRequest(
        model=vendor.model, messages=[ChatMessage("user", "Which worktop?")], tools=[SEARCH_TOOL], max_tokens=300
    )
    events = [event async for event in vendor.provider.stream(request)]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Let me look."]
    made = [e for e in events if isinstance(e, LlmToolCall)]
    assert [(c.id, c.name, json.loads(c.arguments)) for c in made] == [
        ("call_a", "search_notes", {"query": "worktop"}),
        ("call_b", "read_note", {}),
    ]
    assert isinstance(events[-1], Usage) and events[-1].stop_reason in ("tool_use", "tool_calls")
    offered = vendor.server.requests[-1].json["tools"][0]
    assert offered in (
        {"type": "function", "function": {"name": "search_notes", "description": "Find notes.",
                                          "parameters": SEARCH_TOOL.input_schema}},
        {"name": "search_notes", "description": "Find notes.", "input_schema": SEARCH_TOOL.input_schema},
    )  # fmt: skip

    follow_up = ChatRequest(
        model=vendor.model,
        messages=[
            ChatMessage("user", "Which worktop?"),
            ChatMessage("assistant", "Let me look.", tool_calls=tuple(made)),
            ChatMessage("tool", "1. Projects/Kitchen.md", tool_call_id="call_a"),
            ChatMessage("tool", "the index holds no note at ''", tool_call_id="call_b"),
        ],
        tools=[SEARCH_TOOL],
        max_tokens=300,
        tool_choice="none",
    )
    await collect(vendor.provider, follow_up)
    choice = vendor.server.requests[-1].json["tool_choice"]
    assert choice == ({"type": "none"} if vendor.id == "anthropic" else "none"), "asked to answer in text now"
    assert vendor.server.requests[-2].json["tool_choice"] in ("auto", {"type": "auto"})
    sent = vendor.server.requests[-1].json["messages"]
    if vendor.id == "anthropic":
        assert sent[1]["content"][1] == {"type": "tool_use", "id": "call_a", "name": "search_notes",
                                         "input": {"query": "worktop"}}  # fmt: skip
        assert [block["tool_use_id"] for block in sent[2]["content"]] == ["call_a", "call_b"], "one user message"
    else:
        assert sent[1]["tool_calls"][0]["function"] == {"name": "search_notes", "arguments": '{"query": "worktop"}'}
        assert [(m["role"], m["tool_call_id"]) for m in sent[2:]] == [("tool", "call_a"), ("tool", "call_b")]
