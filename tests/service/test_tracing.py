"""OpenTelemetry: a turn through Envoy that arrives with a W3C `traceparent` becomes one trace of spans in the shim,
chat and retrieve, each the child of the one before; with an OTLP endpoint, Envoy's own span sits between the caller
and the shim."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage
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


class OtlpReceiver:
    """An OTLP/HTTP collector on a free loopback port that keeps the spans it is sent (protobuf bodies)."""

    def __init__(self) -> None:
        self.spans: list[SpanMessage] = []
        received = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.body()
                request = ExportTraceServiceRequest.FromString(body)
                received.extend(span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def body(self) -> bytes:
                if self.headers.get("transfer-encoding") != "chunked":  # Envoy sends chunks
                    return self.rfile.read(int(self.headers.get("content-length", 0)))
                parts = []
                while size := int(self.rfile.readline().split(b";")[0], 16):
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
                self.rfile.readline()
                return b"".join(parts)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    yield receiver
    receiver.close()


async def test_envoy_reports_its_own_span_between_the_caller_and_the_shim(
    gateway: Gateway,  # noqa: F811
    spans: InMemorySpanExporter,
    receiver: OtlpReceiver,
) -> None:
    await gateway.start(trace_endpoint=receiver.url)
    client = gateway.client(gateway.envoy_url)
    conversation = (await client.post("/api/chat/conversations", json={})).json()["conversation"]["id"]
    spans.clear()
    path = f"/api/chat/conversations/{conversation}/messages"
    answered = await client.post(
        path, json={"content": "How often do I water?"}, headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"}
    )
    assert answered.status_code == 200 and "event: done" in answered.text
    for _ in range(100):  # Envoy sends its spans every second
        ours = [s for s in receiver.spans if s.trace_id.hex() == TRACE_ID]
        if ours:
            break
        await asyncio.sleep(0.1)
    (envoy,) = ours
    assert envoy.parent_span_id.hex() == CALLER_SPAN and envoy.kind == SpanMessage.SPAN_KIND_SERVER
    shim = next(s for s in spans.get_finished_spans() if s.name.startswith("POST /api/chat/conversations/"))
    assert format(shim.parent.span_id, "016x") == envoy.span_id.hex(), "the shim continues Envoy's span"
