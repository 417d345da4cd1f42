"""A browser's path: grpc-web over HTTP/1.1 to the real Envoy, which speaks gRPC over HTTP/2 to the services."""

from __future__ import annotations

import uuid

from secondbrain.chat.v1 import chat_service_pb2 as chat
from secondbrain.ingest.v1 import ingest_service_pb2 as ingest
from secondbrain.retrieve.v1 import retrieve_service_pb2 as retrieve
from tests.chat.conftest import text_of
from tests.gateway.conftest import ALLOWED_ORIGIN, Gateway
from tests.gateway.grpc_web import call
from tests.wire import Reply

QUESTION = "How often do I water the tomatoes?"
SEND = "/secondbrain.chat.v1.ChatService/SendMessage"


async def test_a_whole_chat_turn_streams_through_envoy_as_grpc_web(gateway: Gateway) -> None:
    # Slow deltas, so the stream is seen arriving in pieces rather than as one buffered body.
    gateway.chat.llm.script.push(Reply(deltas=["Every morning ", "before nine ", "[1]."], delay=0.2))
    client = gateway.client(gateway.envoy_url, origin=ALLOWED_ORIGIN)
    created = await call(
        client, "/secondbrain.chat.v1.ChatService/CreateConversation", chat.CreateConversationRequest()
    )
    assert created.grpc_status == 0, created.grpc_message
    conversation = created.decode(chat.CreateConversationResponse)[0].conversation

    reply = await call(client, SEND, chat.SendMessageRequest(conversation_id=conversation.id, content=QUESTION))

    assert reply.http_status == 200 and reply.headers["content-type"].startswith("application/grpc-web")
    assert reply.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert "grpc-status" in reply.headers["access-control-expose-headers"]
    assert reply.grpc_status == 0, reply.grpc_message
    events = reply.decode(chat.SendMessageResponse)
    assert [e.WhichOneof("event") for e in events] == ["sources", "delta", "delta", "delta", "done"]
    assert events[0].sources.retrieval.passages[0].note_path == "Projects/Garden.md"
    assert text_of(events) == "Every morning before nine [1]."
    assert reply.chunks > 1, "the events arrived as they were sent, not all at once"
    stored = await gateway.chat.get(conversation.id)
    assert stored.messages[-1].id == events[-1].done.message_id
    assert stored.messages[-1].content == "Every morning before nine [1]."


async def test_a_retrieve_stream_through_envoy(gateway: Gateway) -> None:
    client = gateway.client(gateway.envoy_url)
    reply = await call(
        client,
        "/secondbrain.retrieve.v1.RetrieveService/Retrieve",
        retrieve.RetrieveRequest(query="sourdough starter", options=retrieve.RetrieveOptions(max_passages=2)),
    )
    assert reply.grpc_status == 0, reply.grpc_message
    events = reply.decode(retrieve.RetrieveResponse)
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[0] == "plan" and kinds[-1] == "done" and set(kinds[1:-1]) == {"passage"}
    assert events[1].passage.note_path == "Recipes/Bread.md" and events[1].passage.number == 1
    assert events[-1].done.passage_count == len(kinds) - 2


async def test_unary_calls_reach_each_service_by_its_path(gateway: Gateway) -> None:
    client = gateway.client(gateway.envoy_url)
    options = await call(client, "/secondbrain.chat.v1.ChatService/GetOptions", chat.GetOptionsRequest())
    assert options.grpc_status == 0
    assert "openai" in [p.id for p in options.decode(chat.GetOptionsResponse)[0].providers]
    status = await call(client, "/secondbrain.ingest.v1.IngestService/GetIndexStatus", ingest.GetIndexStatusRequest())
    assert status.grpc_status == 0 and status.decode(ingest.GetIndexStatusResponse)[0].notes == 3
    search = await call(
        client, "/secondbrain.retrieve.v1.RetrieveService/Search", retrieve.SearchRequest(query="Lisbon")
    )
    assert search.decode(retrieve.SearchResponse)[0].hits[0].path == "Travel.md"


async def test_a_refused_call_carries_its_status_and_message_to_the_browser(gateway: Gateway) -> None:
    client = gateway.client(gateway.envoy_url)
    missing = str(uuid.uuid4())
    reply = await call(client, SEND, chat.SendMessageRequest(conversation_id=missing, content=QUESTION))
    assert reply.http_status == 200 and reply.messages == []
    assert reply.grpc_status == 5  # NOT_FOUND
    assert missing in reply.grpc_message


async def test_a_cors_preflight_is_allowed_for_a_configured_origin_only(gateway: Gateway) -> None:
    client = gateway.client(gateway.envoy_url)
    preflight = {
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,x-grpc-web,authorization",
    }
    allowed = await client.options(SEND, headers={"origin": ALLOWED_ORIGIN, **preflight})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert "POST" in allowed.headers["access-control-allow-methods"]
    assert "x-grpc-web" in allowed.headers["access-control-allow-headers"]
    assert "authorization" in allowed.headers["access-control-allow-headers"]

    refused = await client.options(SEND, headers={"origin": "https://evil.example", **preflight})
    assert refused.status_code == 403
    assert "access-control-allow-origin" not in refused.headers
    assert "SECONDBRAIN_CORS_ORIGINS" in refused.json()["error"]["message"]

    # An actual cross-origin call from another origin gets no CORS grant, so a browser withholds the answer.
    other = await call(
        gateway.client(gateway.envoy_url, origin="https://evil.example"),
        "/secondbrain.chat.v1.ChatService/GetOptions",
        chat.GetOptionsRequest(),
    )
    assert "access-control-allow-origin" not in other.headers


async def test_envoy_routes_the_rest_api_and_the_ui_to_the_shim(gateway: Gateway) -> None:
    client = gateway.client(gateway.envoy_url)
    options = await client.get("/api/chat/options")
    assert options.status_code == 200 and options.json()["providers"]
    page = await client.get("/")
    assert page.status_code == 200 and "secondbrain" in page.text
