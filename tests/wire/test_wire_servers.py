"""The wire servers, driven by the real openai and anthropic SDKs (and plain HTTP clients where no SDK is installed).

These tests pin down what the SDKs really do with each scripted behaviour, because service tests will rely on it:
a stream cut by an error event must raise rather than end as a short success, a dropped connection must surface,
and a client that walks away must be seen by the server.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import struct
from collections.abc import AsyncIterator

import aiohttp
import anthropic
import httpx2
import openai
import pytest

from tests.wire import AnthropicServer, OllamaServer, OpenAIServer, Reply, RerankServer, ToolCall, embed
from tests.wire.base import WireServer

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
async def openai_server() -> AsyncIterator[OpenAIServer]:
    async with OpenAIServer() as server:
        yield server


@pytest.fixture
async def anthropic_server() -> AsyncIterator[AnthropicServer]:
    async with AnthropicServer() as server:
        yield server


@pytest.fixture
async def ollama_server() -> AsyncIterator[OllamaServer]:
    async with OllamaServer(max_input_tokens=5) as server:
        yield server


@pytest.fixture
async def rerank_server() -> AsyncIterator[RerankServer]:
    async with RerankServer() as server:
        yield server


def openai_client(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key="test-key", max_retries=0)


@pytest.fixture
async def openai_sdk(openai_server: OpenAIServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai_client(openai_server.base_url) as client:
        yield client


@pytest.fixture
async def anthropic_sdk(anthropic_server: AnthropicServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(base_url=anthropic_server.base_url, api_key="test-key", max_retries=0)
    async with client:
        yield client


async def wait_for_disconnect(server: WireServer) -> None:
    """Polls for up to 5 s: the server notices a departed client on its own schedule, not the test's."""
    for _ in range(500):
        if server.disconnects:
            break
        await asyncio.sleep(0.01)
    assert server.disconnects == 1


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))


# --- OpenAI chat -------------------------------------------------------------------------------------------------


async def test_openai_stream_arrives_as_scripted_deltas_then_finish_then_usage(
    openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI
) -> None:
    openai_server.script.push(Reply(deltas=["The", " answer", " is", " 42"], usage=(30, 7)))
    stream = await openai_sdk.chat.completions.create(
        model="gpt-test", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]

    assert {chunk.model for chunk in chunks} == {"gpt-test"}
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [chunk.choices[0].delta.content for chunk in chunks[1:5]] == ["The", " answer", " is", " 42"]
    assert chunks[5].choices[0].finish_reason == "stop"
    assert all(chunk.usage is None for chunk in chunks[:6])
    assert chunks[6].choices == []
    assert chunks[6].usage is not None
    assert (chunks[6].usage.prompt_tokens, chunks[6].usage.completion_tokens, chunks[6].usage.total_tokens) == (
        30,
        7,
        37,
    )
    assert len(chunks) == 7


async def test_openai_stream_without_include_usage_has_no_usage_chunk(
    openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI
) -> None:
    stream = await openai_sdk.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    chunks = [chunk async for chunk in stream]

    assert all(chunk.choices for chunk in chunks)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks) == "Hello, world."
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_openai_non_streaming_joins_the_deltas(
    openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI
) -> None:
    openai_server.script.push(Reply(deltas=["a", "b"], stop_reason="length", usage=(5, 2)))
    completion = await openai_sdk.chat.completions.create(model="m", messages=MESSAGES)

    assert completion.choices[0].message.content == "ab"
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage is not None
    assert completion.usage.total_tokens == 7
    request = openai_server.requests[-1]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.json["messages"] == MESSAGES


async def test_openai_in_stream_error_raises_instead_of_ending_short(
    openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI
) -> None:
    openai_server.script.push(Reply(fail_after=2, error_message="upstream melted"))
    stream = await openai_sdk.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    received: list[str] = []

    with pytest.raises(openai.APIError, match="upstream melted") as caught:
        async for chunk in stream:
            received.append(chunk.choices[0].delta.content or "")

    assert not isinstance(caught.value, openai.APIStatusError)  # the stream's status was 200
    assert caught.value.type == "server_error"
    assert received == ["", "Hello", ", "]


async def test_openai_scripted_401_raises_authentication_error(
    openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI
) -> None:
    openai_server.script.push(Reply(status=401, error_message="Incorrect API key provided"))

    with pytest.raises(openai.AuthenticationError) as caught:
        await openai_sdk.chat.completions.create(model="m", messages=MESSAGES, stream=True)

    assert caught.value.status_code == 401
    assert caught.value.code == "invalid_api_key"
    assert caught.value.message == "Error code: 401 - Incorrect API key provided"


async def test_openai_429_raises_without_retries_and_is_retried_with_them(
    openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI
) -> None:
    openai_server.script.push(Reply(status=429, headers={"retry-after": "0"}))
    with pytest.raises(openai.RateLimitError) as caught:
        await openai_sdk.chat.completions.create(model="m", messages=MESSAGES)
    assert caught.value.response.headers["retry-after"] == "0"
    assert len(openai_server.requests) == 1

    openai_server.script.push(Reply(status=429, headers={"retry-after": "0"}), Reply(deltas=["ok"]))
    completion = await openai_sdk.with_options(max_retries=1).chat.completions.create(model="m", messages=MESSAGES)
    assert completion.choices[0].message.content == "ok"
    assert [r.headers["x-stainless-retry-count"] for r in openai_server.requests[1:]] == ["0", "1"]


async def test_openai_dropped_stream_raises_connection_error(
    openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI
) -> None:
    openai_server.script.push(Reply(drop_after=2))
    stream = await openai_sdk.chat.completions.create(
        model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    received: list[str] = []

    # The openai SDK wraps httpx2's incomplete-chunked-read error in APIConnectionError.
    with pytest.raises(openai.APIConnectionError) as caught:
        async for chunk in stream:
            received.append(chunk.choices[0].delta.content or "")

    assert isinstance(caught.value.__cause__, httpx2.RemoteProtocolError)
    assert received == ["", "Hello", ", "]
    assert openai_server.disconnects == 0  # the server hung up, the client did not


async def test_openai_dropped_non_streaming_request_raises_connection_error(
    openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI
) -> None:
    openai_server.script.push(Reply(drop_after=0))
    with pytest.raises(openai.APIConnectionError):
        await openai_sdk.chat.completions.create(model="m", messages=MESSAGES)


async def test_openai_cancelled_consumer_is_seen_as_a_disconnect(
    openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI
) -> None:
    openai_server.script.push(Reply(deltas=["one", "two", "three", "four"], delay=0.2))
    first_delta = asyncio.Event()

    async def consume() -> None:
        async with await openai_sdk.chat.completions.create(model="m", messages=MESSAGES, stream=True) as stream:
            async for chunk in stream:
                if chunk.choices[0].delta.content:
                    first_delta.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_delta.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    await wait_for_disconnect(openai_server)


# --- OpenAI embeddings -------------------------------------------------------------------------------------------


async def test_openai_embeddings_default_request_base64_and_decode_to_the_vectors(
    openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI
) -> None:
    texts = ["the cat sat on the mat", "a cat on a mat", "quarterly tax filing deadline"]
    response = await openai_sdk.embeddings.create(model="text-embedding-3-small", input=texts)

    # With no encoding_format given the SDK asks for base64 and decodes it back into floats itself.
    assert openai_server.requests[-1].json["encoding_format"] == "base64"
    vectors = [item.embedding for item in response.data]
    assert vectors == [embed(text) for text in texts]
    assert [len(vector) for vector in vectors] == [384, 384, 384]
    assert cosine(vectors[0], vectors[1]) > 0.3  # three shared words
    assert cosine(vectors[0], vectors[2]) < 0.1  # none shared
    assert response.usage.prompt_tokens == 6 + 5 + 4


async def test_openai_embeddings_float_and_explicit_base64(openai_sdk: openai.AsyncOpenAI) -> None:
    floats = await openai_sdk.embeddings.create(model="m", input="hi there", encoding_format="float", dimensions=64)
    encoded = await openai_sdk.embeddings.create(model="m", input="hi there", encoding_format="base64", dimensions=64)

    assert floats.data[0].embedding == embed("hi there", 64)
    # An explicit "base64" is handed back undecoded; it is little-endian float32.
    raw = base64.b64decode(str(encoded.data[0].embedding))
    assert list(struct.unpack("<64f", raw)) == floats.data[0].embedding
    assert math.isclose(math.hypot(*floats.data[0].embedding), 1.0, rel_tol=1e-6)


async def test_openai_embeddings_over_the_context_length_fail_like_openai() -> None:
    async with OpenAIServer(max_input_tokens=5) as server, openai_client(server.base_url) as client:
        with pytest.raises(openai.BadRequestError, match="maximum context length is 5 tokens"):
            await client.embeddings.create(model="m", input=["short one", "one two three four five six"])
        response = await client.embeddings.create(model="m", input=["one two three four five"])
        assert len(response.data) == 1


async def test_openai_embeddings_follow_the_script(openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI) -> None:
    openai_server.script.push(Reply(status=503))
    with pytest.raises(openai.InternalServerError):
        await openai_sdk.embeddings.create(model="m", input="x")


async def test_openai_client_timeout_is_seen_as_a_disconnect(
    openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI
) -> None:
    openai_server.script.push(Reply(delay=2.0))

    with pytest.raises(openai.APITimeoutError):
        await openai_sdk.embeddings.create(model="m", input="slow", timeout=0.1)

    await wait_for_disconnect(openai_server)


# --- Anthropic -------------------------------------------------------------------------------------------------


async def test_anthropic_non_streaming_message(
    anthropic_server: AnthropicServer, anthropic_sdk: anthropic.AsyncAnthropic
) -> None:
    message = await anthropic_sdk.messages.create(model="claude-test", max_tokens=64, messages=MESSAGES)

    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello, world."
    assert (message.model, message.stop_reason, message.role) == ("claude-test", "end_turn", "assistant")
    assert (message.usage.input_tokens, message.usage.output_tokens) == (12, 4)
    request = anthropic_server.requests[-1]
    assert request.path == "/v1/messages"
    # anthropic 2.x sends the API key as a bearer token, not as x-api-key; Anthropic accepts either.
    assert request.headers.get("x-api-key") == "test-key" or request.headers.get("authorization") == "Bearer test-key"
    assert "anthropic-version" in request.headers


async def test_anthropic_stream_helper_assembles_the_final_message(
    anthropic_server: AnthropicServer, anthropic_sdk: anthropic.AsyncAnthropic
) -> None:
    anthropic_server.script.push(Reply(deltas=["Par", "is"], usage=(40, 9), stop_reason="max_tokens"))
    async with anthropic_sdk.messages.stream(model="m", max_tokens=9, messages=MESSAGES) as stream:
        texts = [text async for text in stream.text_stream]
        message = await stream.get_final_message()

    assert texts == ["Par", "is"]
    assert message.content[0].type == "text"
    assert message.content[0].text == "Paris"
    assert message.stop_reason == "max_tokens"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (40, 9)


async def test_anthropic_raw_stream_is_the_real_event_sequence(anthropic_server: AnthropicServer) -> None:
    anthropic_server.script.push(Reply(deltas=["a", "b"]))
    url = f"{anthropic_server.base_url}/v1/messages"
    async with httpx2.AsyncClient() as http, http.stream("POST", url, json={"stream": True, "model": "m"}) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line async for line in response.aiter_lines()]

    events = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
    assert events == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


async def test_anthropic_in_stream_error_raises(
    anthropic_server: AnthropicServer, anthropic_sdk: anthropic.AsyncAnthropic
) -> None:
    anthropic_server.script.push(Reply(fail_after=1, error_message="Overloaded"))
    received: list[str] = []

    # The SDK raises an APIStatusError whose status is the stream's 200; the error type is only in the body.
    with pytest.raises(anthropic.APIStatusError, match="Overloaded") as caught:
        async with anthropic_sdk.messages.stream(model="m", max_tokens=9, messages=MESSAGES) as stream:
            async for text in stream.text_stream:
                received.append(text)

    assert caught.value.status_code == 200
    assert caught.value.body == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert received == ["Hello"]


@pytest.mark.parametrize(
    ("status", "error_class", "error_type"),
    [
        (401, anthropic.AuthenticationError, "authentication_error"),
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
    ],
)
async def test_anthropic_error_statuses_raise_the_sdk_errors(
    anthropic_server: AnthropicServer,
    anthropic_sdk: anthropic.AsyncAnthropic,
    status: int,
    error_class: type[anthropic.APIStatusError],
    error_type: str,
) -> None:
    anthropic_server.script.push(Reply(status=status, headers={"retry-after": "0"}))

    with pytest.raises(error_class) as caught:
        await anthropic_sdk.messages.create(model="m", max_tokens=9, messages=MESSAGES)

    assert caught.value.status_code == status
    assert caught.value.body == {"type": "error", "error": {"type": error_type, "message": "scripted error"}}
    assert len(anthropic_server.requests) == 1


async def test_anthropic_dropped_stream_raises_the_raw_transport_error(
    anthropic_server: AnthropicServer, anthropic_sdk: anthropic.AsyncAnthropic
) -> None:
    anthropic_server.script.push(Reply(drop_after=2))
    received: list[str] = []

    # anthropic before 2.17 let httpx2's error escape a broken stream; 2.17 wraps it in APIConnectionError, as openai
    # does. The provider handles both (llm/anthropic_provider.py), so either is what the SDK may raise.
    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError), match="incomplete chunked read"):
        async with anthropic_sdk.messages.stream(model="m", max_tokens=9, messages=MESSAGES) as stream:
            async for text in stream.text_stream:
                received.append(text)

    assert received == ["Hello", ", "]


async def test_anthropic_closed_stream_is_seen_as_a_disconnect(
    anthropic_server: AnthropicServer, anthropic_sdk: anthropic.AsyncAnthropic
) -> None:
    anthropic_server.script.push(Reply(delay=0.2))
    async with anthropic_sdk.messages.stream(model="m", max_tokens=9, messages=MESSAGES) as stream:
        async for _text in stream.text_stream:
            break

    await wait_for_disconnect(anthropic_server)


# --- Ollama ----------------------------------------------------------------------------------------------------


async def test_ollama_native_embed(ollama_server: OllamaServer) -> None:
    async with aiohttp.ClientSession(base_url=ollama_server.base_url) as http:
        async with http.post("/api/embed", json={"model": "nomic-embed-text", "input": ["one two", "three"]}) as one:
            batch = await one.json()
        async with http.post("/api/embed", json={"model": "nomic-embed-text", "input": "one two"}) as two:
            single = await two.json()
        async with http.post("/api/embeddings", json={"model": "nomic-embed-text", "prompt": "one two"}) as three:
            legacy = await three.json()
        async with http.get("/api/tags") as four:
            tags = await four.json()

    assert batch["model"] == "nomic-embed-text"
    assert batch["embeddings"] == [embed("one two"), embed("three")]
    assert batch["prompt_eval_count"] == 3
    assert {"total_duration", "load_duration"} <= batch.keys()
    assert single["embeddings"] == [embed("one two")]
    assert legacy == {"embedding": embed("one two")}
    assert [model["name"] for model in tags["models"]] == ["nomic-embed-text:latest", "llama3.2:latest"]


async def test_ollama_native_errors_use_ollamas_shape(ollama_server: OllamaServer) -> None:
    ollama_server.script.push(Reply(status=500, error_message="model runner crashed"))
    too_long = {"model": "m", "input": "one two three four five six", "truncate": False}
    async with aiohttp.ClientSession(base_url=ollama_server.base_url) as http:
        async with http.post("/api/embed", json={"model": "m", "input": "x"}) as scripted:
            assert (scripted.status, await scripted.json()) == (500, {"error": "model runner crashed"})
        async with http.post("/api/embed", json=too_long) as rejected:
            assert rejected.status == 400
            assert "context length" in (await rejected.json())["error"]
        async with http.post("/api/embed", json={**too_long, "truncate": True}) as truncated:
            assert truncated.status == 200


async def test_ollama_serves_the_openai_api_under_v1(ollama_server: OllamaServer) -> None:
    async with openai_client(ollama_server.openai_base_url) as client:
        response = await client.embeddings.create(model="nomic-embed-text", input="one two")
        completion = await client.chat.completions.create(model="llama3.2", messages=MESSAGES)

    assert response.data[0].embedding == embed("one two")
    assert completion.choices[0].message.content == "Hello, world."
    assert ollama_server.base_url + "/v1" == ollama_server.openai_base_url


# --- Rerank ----------------------------------------------------------------------------------------------------


async def test_rerank_orders_by_word_overlap(rerank_server: RerankServer) -> None:
    request = {
        "model": "rerank-v3.5",
        "query": "red apple pie",
        "documents": ["a blue car", {"text": "apple pie recipe"}, "red apple pie, warm", "pie"],
        "top_n": 3,
    }
    async with aiohttp.ClientSession() as http, http.post(f"{rerank_server.base_url}/v1/rerank", json=request) as resp:
        body = await resp.json()

    assert [result["index"] for result in body["results"]] == [2, 1, 3]
    scores = [result["relevance_score"] for result in body["results"]]
    assert scores[0] == 1.0
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= score <= 1.0 for score in scores)
    assert body["id"]
    assert "meta" in body


async def test_rerank_follows_the_script(rerank_server: RerankServer) -> None:
    rerank_server.script.push(Reply(status=429, error_message="slow down", headers={"retry-after": "1"}))
    request = {"model": "m", "query": "q", "documents": ["d"]}
    async with aiohttp.ClientSession() as http, http.post(f"{rerank_server.base_url}/v1/rerank", json=request) as resp:
        assert resp.status == 429
        assert resp.headers["retry-after"] == "1"
        assert await resp.json() == {"message": "slow down"}


# --- Lifecycle -------------------------------------------------------------------------------------------------


async def test_servers_bind_a_free_port_and_stop_cleanly() -> None:
    first, second = OpenAIServer(), AnthropicServer()
    async with first, second:
        assert first.base_url.startswith("http://127.0.0.1:")
        assert first.base_url.endswith("/v1")
        assert first.root_url != second.base_url
        stopped_url = f"{second.base_url}/v1/messages"

    with pytest.raises(RuntimeError, match="not started"):
        _ = first.base_url
    async with httpx2.AsyncClient() as http:
        with pytest.raises(httpx2.ConnectError):
            await http.post(stopped_url, json={})


# -- tool calling, scripted per test (for a model that searches and reads before it answers) --------------------------

SEARCH = ToolCall("search_notes", {"query": "kitchen worktop", "limit": 5}, id="call_search")
READ = ToolCall("read_note", {"path": "Projects/Kitchen Renovation.md", "start_line": 11}, pieces=5)
TOOLS = [{"type": "function", "function": {"name": "search_notes", "parameters": {"type": "object"}}}]


async def test_openai_streams_tool_calls_with_their_arguments_in_pieces(
    openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI
) -> None:
    openai_server.script.push(Reply(deltas=["Let me look."], tool_calls=[SEARCH, READ]))
    stream = await openai_sdk.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS, stream=True)
    text, calls, finish, argument_chunks = "", {}, None, 0
    async for chunk in stream:
        choice = chunk.choices[0]
        text += choice.delta.content or ""
        for delta in choice.delta.tool_calls or []:
            call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            call["id"] = delta.id or call["id"]
            if delta.function is not None:
                call["name"] = delta.function.name or call["name"]
                call["arguments"] += delta.function.arguments or ""
                argument_chunks += bool(delta.function.arguments)
        finish = choice.finish_reason or finish
    assert text == "Let me look." and finish == "tool_calls"
    assert [(c["id"], c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
        ("call_search", "search_notes", SEARCH.arguments),
        ("call_1_read_note", "read_note", READ.arguments),
    ]
    assert argument_chunks == len(SEARCH.argument_pieces()) + len(READ.argument_pieces()) > 2, "arguments in pieces"
    assert openai_server.requests[-1].json["tools"] == TOOLS


async def test_openai_non_streaming_tool_calls(openai_server: OpenAIServer, openai_sdk: openai.AsyncOpenAI) -> None:
    openai_server.script.push(Reply(deltas=[], tool_calls=[SEARCH]))
    completion = await openai_sdk.chat.completions.create(model="m", messages=MESSAGES, tools=TOOLS)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    calls = choice.message.tool_calls or []
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls] == [  # type: ignore[union-attr]
        ("call_search", "search_notes", SEARCH.arguments)
    ]


async def test_anthropic_streams_tool_use_blocks_with_input_json_deltas(
    anthropic_server: AnthropicServer, anthropic_sdk: anthropic.AsyncAnthropic
) -> None:
    anthropic_server.script.push(Reply(deltas=["Let me look."], tool_calls=[SEARCH, READ]))
    async with anthropic_sdk.messages.stream(model="m", max_tokens=64, messages=MESSAGES) as stream:
        partial = [
            event.delta.partial_json
            async for event in stream
            if event.type == "content_block_delta" and event.delta.type == "input_json_delta"
        ]
        message = await stream.get_final_message()
    assert message.stop_reason == "tool_use"
    assert message.content[0].type == "text" and message.content[0].text == "Let me look."
    uses = [(block.id, block.name, block.input) for block in message.content if block.type == "tool_use"]
    assert uses == [
        ("call_search", "search_notes", SEARCH.arguments),
        ("call_1_read_note", "read_note", READ.arguments),
    ]
    assert len(partial) == len(SEARCH.argument_pieces()) + len(READ.argument_pieces())


async def test_anthropic_non_streaming_tool_use(
    anthropic_server: AnthropicServer, anthropic_sdk: anthropic.AsyncAnthropic
) -> None:
    anthropic_server.script.push(Reply(deltas=[], tool_calls=[READ]))
    message = await anthropic_sdk.messages.create(model="m", max_tokens=64, messages=MESSAGES)
    assert message.stop_reason == "tool_use"
    uses = [(block.name, block.input) for block in message.content if block.type == "tool_use"]
    assert uses == [("read_note", READ.arguments)]
