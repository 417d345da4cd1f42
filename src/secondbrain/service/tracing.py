"""Optional OpenTelemetry tracing: a span per call in the shim, chat and retrieve, joined into one trace.

Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, as OpenTelemetry's own
convention has it; then spans go to that collector over OTLP/HTTP. Either way the W3C `traceparent` a caller sends
(a browser, Envoy, a client's own tracer) is passed on from the shim to chat to retrieve, so a trace that starts
outside is continued, and one process with tracing on still links to its neighbours.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping, MutableMapping
from urllib.parse import unquote

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind

log = logging.getLogger(__name__)

_tracer = trace.get_tracer("secondbrain")


def otlp_traces_endpoint() -> str | None:
    """Where spans go over OTLP/HTTP, by OpenTelemetry's variables (the traces one whole, the general one plus
    /v1/traces), or None when tracing is off. Envoy is pointed at the same place."""
    if endpoint := os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return endpoint
    if endpoint := os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return endpoint.rstrip("/") + "/v1/traces"
    return None


def otlp_headers() -> dict[str, str]:
    """Headers for the collector (authentication, say), by OpenTelemetry's variables: `key=value` pairs, comma
    separated, values percent-encoded; the traces variable wins."""
    raw = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    pairs = (pair.partition("=") for pair in raw.split(",") if "=" in pair)
    return {unquote(key.strip()): unquote(value.strip()) for key, _, value in pairs if key.strip()}


def configure_tracing(service: str) -> bool:
    """Export this process's spans when an OTLP endpoint is configured; returns whether tracing is on."""
    if otlp_traces_endpoint() is None:
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": f"secondbrain-{service}"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    log.info("tracing on", extra={"service_name": f"secondbrain-{service}"})
    return True


def start_server_span(name: str, carrier: Mapping[str, str], **attributes: str) -> Span:
    """A span for serving one call, continuing the trace the caller's `traceparent` names (if any), made current
    for the rest of the calling task; the caller ends it. It is never detached: each call runs in a task of its own
    whose context is dropped with it, and a stream abandoned by its client is closed from another context, where a
    detach would fail."""
    parent = propagate.extract(carrier=dict(carrier))
    span = _tracer.start_span(name, context=parent, kind=SpanKind.SERVER, attributes=attributes)
    otel_context.attach(trace.set_span_in_context(span, parent))
    return span


@contextlib.contextmanager
def server_span(name: str, carrier: Mapping[str, str], **attributes: str) -> Iterator[Span]:
    """`start_server_span` ended when the block ends (for handlers that are not generators)."""
    span = start_server_span(name, carrier, **attributes)
    try:
        yield span
    finally:
        span.end()


def inject(carrier: MutableMapping[str, str]) -> None:
    """Add the current span's `traceparent` (and `tracestate`) to an outgoing call's headers or metadata."""
    propagate.inject(carrier)
