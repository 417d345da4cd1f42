"""The REST + SSE shim over real services: the design record's chat API, search, retrieve and index status, errors
as HTTP statuses with a JSON body, and a client that leaves cancelling the turn."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import jsonschema
import pytest
from openapi_spec_validator import validate as validate_openapi

from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.gateway.proto_json import to_json
from secondbrain.gateway.request_message import MAX_BODY_BYTES
from tests.chat.conftest import eventually
from tests.gateway.conftest import Gateway, ServerSentEvent, parse_sse
from tests.wire import Reply
from tests.wire.script import ToolCall

QUESTION = "How often do I water the tomatoes?"
# What differs between two runs of the same turn: ids, clocks.
_VOLATILE = {"userMessageId", "messageId", "timings", "createTime", "updateTime"}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _stable(item) for key, item in value.items() if key not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(item) for item in value]
    return value


def _grpc_events(events: list[pb.SendMessageResponse]) -> list[tuple[str, Any]]:
    out = []
    for event in events:
        kind = str(event.WhichOneof("event"))
        out.append((kind, _stable(to_json(getattr(event, kind)))))
    return out


async def _sse(gateway: Gateway, path: str, body: dict[str, Any]) -> list[ServerSentEvent]:
    client = gateway.client(gateway.shim_url)
    response = await client.post(path, json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"].startswith("no-cache")
    return parse_sse(response.text)


def _schema(document: dict[str, Any], name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}", "components": document["components"]}


async def test_a_turn_over_sse_is_the_same_events_in_the_same_order_as_over_grpc(gateway: Gateway) -> None:
    answer = Reply(deltas=["Every morning ", "before nine ", "[1]."], usage=(120, 7))
    gateway.chat.llm.script.push(answer, answer)
    _, over_grpc = await gateway.chat.ask(QUESTION)

    conversation = (await gateway.client(gateway.shim_url).post("/api/chat/conversations", json={})).json()
    events = await _sse(
        gateway, f"/api/chat/conversations/{conversation['conversation']['id']}/messages", {"content": QUESTION}
    )

    assert [e.event for e in events] == ["sources", "delta", "delta", "delta", "done"]
    assert [(e.event, _stable(e.data)) for e in events] == _grpc_events(over_grpc)
    assert events[0].data["retrieval"]["passages"][0]["notePath"] == "Projects/Garden.md"
    assert events[-1].data["usage"] == {"inputTokens": 120, "outputTokens": 7}
    stored = await gateway.chat.get(conversation["conversation"]["id"])
    assert [m.id for m in stored.messages] == [events[0].data["userMessageId"], events[-1].data["messageId"]]


async def test_conversations_settings_and_options_over_rest(gateway: Gateway) -> None:
    client = gateway.client(gateway.shim_url)
    options = (await client.get("/api/chat/options")).json()
    assert {"openai", "anthropic", "extractive"} <= {p["id"] for p in options["providers"]}
    assert options["personas"][0]["id"] == "assistant" and "gardener" in [p["id"] for p in options["personas"]]

    settings = (await client.get("/api/chat/settings")).json()["settings"]
    assert settings["provider"] == "openai" and settings["passages"] == 8
    changed = await client.put(
        "/api/chat/settings", json={"settings": {"passages": 5, "personaId": "gardener"}, "updateMask": "passages"}
    )
    assert changed.status_code == 200
    assert changed.json()["settings"]["passages"] == 5
    assert changed.json()["settings"]["personaId"] == "", "only the masked field changes"
    refused = await client.put(
        "/api/chat/settings", json={"settings": {"provider": "nonesuch"}, "updateMask": "provider"}
    )
    assert refused.status_code == 400 and "nonesuch" in refused.json()["error"]["message"]

    created = await client.post("/api/chat/conversations", json={"title": "Garden", "personaId": "gardener"})
    conversation_id = created.json()["conversation"]["id"]
    listed = (await client.get("/api/chat/conversations", params={"pageSize": 10})).json()
    assert [c["id"] for c in listed["conversations"]] == [conversation_id]
    renamed = await client.patch(f"/api/chat/conversations/{conversation_id}", json={"title": "Tomatoes"})
    assert renamed.json()["conversation"]["title"] == "Tomatoes"
    got = (await client.get(f"/api/chat/conversations/{conversation_id}")).json()["conversation"]
    assert (got["title"], got["personaId"], got["messages"]) == ("Tomatoes", "gardener", [])
    assert (await client.delete(f"/api/chat/conversations/{conversation_id}")).json() == {}
    gone = await client.get(f"/api/chat/conversations/{conversation_id}")
    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "NOT_FOUND" and conversation_id in gone.json()["error"]["message"]


async def test_search_retrieve_and_index_status_over_rest(gateway: Gateway) -> None:
    client = gateway.client(gateway.shim_url)
    search = await client.get(
        "/api/search", params={"query": "water", "mode": "SEARCH_MODE_KEYWORD", "filters.folders": "Projects"}
    )
    assert search.status_code == 200, search.text
    assert [hit["path"] for hit in search.json()["hits"]] == ["Projects/Garden.md"]

    events = await _sse(gateway, "/api/retrieve", {"query": "sourdough starter", "options": {"maxPassages": 2}})
    kinds = [e.event for e in events]
    assert kinds[0] == "plan" and kinds[-1] == "done" and set(kinds[1:-1]) == {"passage"}
    assert events[1].data["notePath"] == "Recipes/Bread.md"

    status = (await client.get("/api/index/status", params={"includeFiles": "true"})).json()
    assert status["notes"] == 3 and status["chunks"] >= 3
    assert {f["path"] for f in status["files"]} >= {"Travel.md", "Recipes/Bread.md"}


class Chunked:
    """A body of `times` copies of `part` with no declared length (sent chunked); read again from its start each
    time it is sent, so a request the test client asks again (conftest.Gateway.client) carries it whole."""

    def __init__(self, part: bytes, times: int) -> None:
        self.part, self.times = part, times

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for _ in range(self.times):
            yield self.part


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "says"),
    [
        ("POST", "/api/chat/conversations", {"content": b"{not json"}, 400, "not valid JSON"),
        # In the API's words, not protobuf's parser text (found by a user).
        (
            "POST",
            "/api/chat/conversations",
            {"json": {"colour": "red"}},
            400,
            "unknown field 'colour'; the fields there are: title, personaId",
        ),
        (
            "PUT",
            "/api/chat/settings",
            {"json": {"settings": {"alternates": "yes"}}},
            400,
            "settings.alternates: expected true or false",
        ),
        ("POST", "/api/chat/conversations", {"json": ["a list"]}, 400, "JSON object"),
        ("PUT", "/api/chat/settings", {"json": {"settings": {"passages": "many"}}}, 400, "passages"),
        ("GET", "/api/chat/conversations", {"params": {"pagesize": "3"}}, 400, "pageSize"),
        ("GET", "/api/search", {"params": [("query", "a"), ("query", "b")]}, 400, "given 2 times"),
        ("GET", "/api/search", {"params": {"query": ""}}, 400, "search for"),
        ("GET", "/api/chat/conversations/not-a-uuid", {}, 400, "not-a-uuid"),
        ("GET", "/api/nothing/here", {}, 404, "/api/openapi.json"),
        ("PUT", "/api/chat/options", {}, 405, "PUT"),
        ("POST", "/api/chat/conversations", {"content": b" " * (MAX_BODY_BYTES + 1)}, 413, "over 1 MiB"),
        # No declared length: refused while it streams in.
        ("POST", "/api/chat/conversations", {"content": Chunked(b" " * 65536, 20)}, 413, "over 1 MiB"),
        # The MCP door keeps the same body limits, before the SDK reads anything.
        ("POST", "/mcp", {"content": b" " * (MAX_BODY_BYTES + 1)}, 413, "over 1 MiB"),
        ("POST", "/mcp", {"content": Chunked(b" " * 65536, 20)}, 413, "over 1 MiB"),
    ],
)
async def test_bad_requests_get_an_http_status_and_a_message_to_act_on(
    gateway: Gateway, method: str, path: str, kwargs: dict[str, Any], status: int, says: str
) -> None:
    response = await gateway.client(gateway.shim_url).request(method, path, **kwargs)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert says in error["message"] and error["status"] == status and error["retryable"] is False


async def test_a_message_to_a_missing_conversation_is_an_http_404_not_a_stream(gateway: Gateway) -> None:
    missing = str(uuid.uuid4())
    response = await gateway.client(gateway.shim_url).post(
        f"/api/chat/conversations/{missing}/messages", json={"content": QUESTION}
    )
    assert response.status_code == 404 and missing in response.json()["error"]["message"]


async def test_a_service_that_is_down_is_a_503_saying_which_and_what_to_do(gateway: Gateway) -> None:
    await gateway.chat.stop_chat()
    response = await gateway.client(gateway.shim_url).get("/api/chat/options")
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "UNAVAILABLE" and error["retryable"] is True
    assert "chat service" in error["message"] and "secondbrain up" in error["message"]


async def test_a_turn_that_fails_in_the_provider_ends_with_an_error_event(gateway: Gateway) -> None:
    gateway.chat.llm.script.push(Reply(deltas=["Every ", "morning ", "..."], fail_after=2))
    conversation = (await gateway.client(gateway.shim_url).post("/api/chat/conversations", json={})).json()
    events = await _sse(
        gateway, f"/api/chat/conversations/{conversation['conversation']['id']}/messages", {"content": QUESTION}
    )
    assert events[0].event == "sources" and events[-1].event == "error"
    assert events[-1].data["code"] == "UNAVAILABLE" and events[-1].data["retryable"] is True
    assert events[-1].data["messageId"], "the partial answer was stored and named"


async def test_a_client_that_disconnects_cancels_the_turn_upstream(gateway: Gateway) -> None:
    gateway.chat.llm.script.push(Reply(deltas=[f"word{i} " for i in range(60)], delay=0.1))
    client = gateway.client(gateway.shim_url)
    conversation_id = (await client.post("/api/chat/conversations", json={})).json()["conversation"]["id"]
    seen = ""
    async with client.stream(
        "POST", f"/api/chat/conversations/{conversation_id}/messages", json={"content": QUESTION}
    ) as response:
        async for chunk in response.aiter_text():
            seen += chunk
            if seen.count("event: delta") >= 2:
                break  # leaving the block closes the connection mid-answer

    async def disconnected() -> bool:
        return gateway.chat.llm.disconnects == 1

    await eventually(disconnected)

    async def stored() -> pb.Message | None:
        answer = (await gateway.chat.get(conversation_id)).messages[1]
        return answer if "cancelled" in answer.error else None

    answer = await eventually(stored)
    assert answer.status == pb.MESSAGE_STATUS_INCOMPLETE
    assert 2 <= len(answer.content.split()) < 60, "the answer stopped when the client left"


async def test_the_openapi_document_validates_and_describes_what_the_shim_sends(gateway: Gateway) -> None:
    client = gateway.client(gateway.shim_url)
    document = (await client.get("/api/openapi.json")).json()
    validate_openapi(document)
    paths = document["paths"]
    assert set(paths["/api/chat/conversations/{id}"]) == {"get", "patch", "delete"}
    turn = paths["/api/chat/conversations/{conversation_id}/messages"]["post"]
    assert "text/event-stream" in turn["responses"]["200"]["content"]

    # Real responses match their schemas (additionalProperties is false, so a field the document lacks fails).
    jsonschema.validate(
        (await client.get("/api/chat/options")).json(), _schema(document, "secondbrain.chat.v1.GetOptionsResponse")
    )
    created = (await client.post("/api/chat/conversations", json={"title": "x"})).json()
    jsonschema.validate(created, _schema(document, "secondbrain.chat.v1.CreateConversationResponse"))
    status = (await client.get("/api/index/status", params={"includeFiles": "true"})).json()
    jsonschema.validate(status, _schema(document, "secondbrain.ingest.v1.GetIndexStatusResponse"))
    gateway.chat.llm.script.push(Reply(deltas=["Every morning [1]."]))
    events = await _sse(
        gateway, f"/api/chat/conversations/{created['conversation']['id']}/messages", {"content": QUESTION}
    )
    payloads = {"sources": "SourcesEvent", "delta": "DeltaEvent", "done": "DoneEvent"}
    for event in events:
        jsonschema.validate(event.data, _schema(document, f"secondbrain.chat.v1.{payloads[event.event]}"))
    missing = await client.get(f"/api/chat/conversations/{uuid.uuid4()}")
    jsonschema.validate(missing.json(), _schema(document, "Error"))


async def test_an_agent_turn_over_sse_streams_its_steps_by_name(gateway: Gateway) -> None:
    """Agent mode asked in the REST body: the tool steps arrive as `tool_call` and `tool_result` events between
    `sources` and the first `delta`, each as the proto's JSON, and the stored message holds them."""
    gateway.chat.llm.script.push(
        Reply(deltas=[], tool_calls=[ToolCall("read_note", {"path": "Projects/Garden.md", "end_line": 5}, id="c1")]),
        Reply(deltas=["Before nine [2]."]),
    )
    client = gateway.client(gateway.shim_url)
    conversation = (await client.post("/api/chat/conversations", json={})).json()["conversation"]
    path = f"/api/chat/conversations/{conversation['id']}/messages"
    events = await _sse(gateway, path, {"content": QUESTION, "mode": "agent", "filters": {"folders": ["Recipes"]}})

    assert [e.event for e in events] == ["sources", "tool_call", "tool_result", "delta", "done"]
    assert (events[0].data["mode"], len(events[0].data["retrieval"]["passages"])) == ("agent", 1)
    assert events[1].data == {"id": "c1", "tool": "read_note",
                              "arguments": '{"path": "Projects/Garden.md", "end_line": 5}'}  # fmt: skip
    result = events[2].data
    assert (result["id"], result["passageNumbers"]) == ("c1", [2])
    assert result["summary"] == "Read Projects/Garden.md lines 1-5"
    assert result["passages"][0]["notePath"] == "Projects/Garden.md" and result["passages"][0]["number"] == 2
    stored = (await client.get(f"/api/chat/conversations/{conversation['id']}")).json()["conversation"]["messages"][1]
    assert stored["agent"]["steps"][0]["summary"] == "Read Projects/Garden.md lines 1-5"
    assert [p["number"] for p in stored["sources"]["passages"]] == [1, 2]

    refused = await client.post(path, json={"content": QUESTION, "mode": "autopilot"})
    assert refused.status_code == 400 and "choose 'rag'" in refused.json()["error"]["message"]
    settings = await client.put("/api/chat/settings", json={"settings": {"mode": "agent"}, "updateMask": "mode"})
    assert settings.json()["settings"]["mode"] == "agent"
