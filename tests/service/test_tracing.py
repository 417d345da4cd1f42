"""OpenTelemetry: a turn through Envoy that arrives with a W3C `traceparent` becomes one trace of spans in the shim,
chat and retrieve, each the child of the one before."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.chat.conftest import stack  # noqa: F401 - the fixtures this module builds on
from tests.gateway.conftest import Gateway, gateway  # noqa: F401

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    """This process's spans, kept in memory (what an OTLP endpoint would receive from each service)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    yield exporter


async def test_a_turn_is_one_trace_from_the_caller_through_shim_chat_and_retrieve(
    gateway: Gateway,  # noqa: F811
    spans: InMemorySpanExporter,
) -> None:
    client = gateway.client(gateway.envoy_url)
    conversation = (await client.post("/api/chat/conversations", json={})).json()["conversation"]["id"]
    spans.clear()
    answered = await client.post(
        f"/api/chat/conversations/{conversation}/messages",
        json={"content": "How often do I water?"},
        headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"},
    )
    assert answered.status_code == 200 and "event: done" in answered.text
    by_name = {span.name: span for span in spans.get_finished_spans()}
    shim = by_name["POST /api/chat/conversations/{conversation_id}/messages"]
    chat = by_name["/secondbrain.chat.v1.ChatService/SendMessage"]
    retrieve = by_name["/secondbrain.retrieve.v1.RetrieveService/Retrieve"]
    assert {format(span.context.trace_id, "032x") for span in (shim, chat, retrieve)} == {TRACE_ID}
    assert format(shim.parent.span_id, "016x") == CALLER_SPAN
    assert chat.parent.span_id == shim.context.span_id
    assert retrieve.parent.span_id == chat.context.span_id
    assert chat.attributes["rpc.grpc.status_code"] == "OK"
