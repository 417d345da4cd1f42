"""What every gRPC service reports about itself: Prometheus metrics, a request id on every log line, an access log.

The outermost server interceptor wraps each call: it takes the caller's `x-request-id` (Envoy makes one per request;
the shim and our own clients pass it on) or makes one, sets it for the call's log lines and onward calls, opens a
tracing span continuing the caller's `traceparent` (see tracing.py), and records the call's outcome in
`secondbrain_rpc_requests_total` and its time in `secondbrain_rpc_duration_seconds`. The other metrics of this
module are recorded where the work happens (retrieval stages, ingest progress, provider calls).
`start_metrics_server` serves them all at /metrics.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import grpc
from opentelemetry.trace import Status, StatusCode
from prometheus_client import Counter, Gauge, Histogram

from secondbrain.jsonlog import request_id
from secondbrain.service.auth import REQUEST_ID_HEADER
from secondbrain.service.handlers import HandlerInterceptor, with_behaviour
from secondbrain.service.metrics_http import start_metrics_http
from secondbrain.service.tracing import start_server_span

log = logging.getLogger(__name__)

# Calls take from a millisecond (a settings read) to minutes (a sync, a long answer).
_CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)

RPC_REQUESTS = Counter("secondbrain_rpc_requests", "gRPC calls served, by outcome", ["method", "code"])
RPC_DURATION = Histogram(
    "secondbrain_rpc_duration_seconds", "Time to serve a gRPC call (a stream: to its end)", ["method"],
    buckets=_CALL_BUCKETS,
)  # fmt: skip
RPC_IN_FLIGHT = Gauge("secondbrain_rpc_in_flight", "gRPC calls being served now", ["method"])
RETRIEVE_STAGE = Histogram(
    "secondbrain_retrieve_stage_seconds", "Time of each retrieval stage (condense, embed, search, rerank, ...)",
    ["stage"], buckets=_CALL_BUCKETS,
)  # fmt: skip
INGEST_FILES = Counter("secondbrain_ingest_files", "Files a sync handled, by outcome", ["outcome"])
INGEST_CHUNKS_EMBEDDED = Counter("secondbrain_ingest_chunks_embedded", "Chunks embedded by syncs")
# The whole queue's depth, which every ingest replica reports alike: aggregate it with max(), not sum().
INGEST_QUEUE_DEPTH = Gauge("secondbrain_ingest_queue_depth", "Files queued or claimed, not yet done, for every sync")
PROVIDER_FIRST_TOKEN = Histogram(
    "secondbrain_provider_first_token_seconds", "From a turn's start to the model's first words",
    ["provider", "model"], buckets=_CALL_BUCKETS,
)  # fmt: skip
PROVIDER_TURN = Histogram(
    "secondbrain_provider_turn_seconds", "A whole chat turn, retrieval and answer", ["provider", "model"],
    buckets=_CALL_BUCKETS,
)  # fmt: skip
PROVIDER_TOKENS = Counter(
    "secondbrain_provider_tokens", "Tokens the model read (input) and wrote (output)", ["provider", "model", "kind"]
)
HTTP_REQUESTS = Counter("secondbrain_http_requests", "REST requests the shim answered", ["endpoint", "status"])
HTTP_DURATION = Histogram(
    "secondbrain_http_duration_seconds", "Time to the shim's response (a stream: to its first event)", ["endpoint"],
    buckets=_CALL_BUCKETS,
)  # fmt: skip
CHAT_TURNS = Counter("secondbrain_chat_turns", "Chat turns, by how they ended", ["outcome"])
CONNECTIONS_CLOSED = Counter(
    "secondbrain_connections_closed", "Connections the shim closed for its bounds (listener_bounds.py)", ["reason"]
)


def start_metrics_server(host: str, port: int) -> int:
    """Serve /metrics on `host:port` (0: any free port) in a thread, bounded (metrics_http.py); returns the port."""
    return start_metrics_http(host, port)


def _code_of(context: grpc.aio.ServicerContext, error: BaseException | None) -> str:
    if error is None:
        return "OK"
    code = context.code() if hasattr(context, "code") else None
    if isinstance(code, grpc.StatusCode):
        return code.name
    return "CANCELLED" if isinstance(error, BaseException) and not isinstance(error, Exception) else "UNKNOWN"


# A caller's request id is kept when it is printable ASCII of a sane length (it goes into gRPC metadata and onto every
# log line); anything else (found by a probe: a byte 0xff sent to the shim raised in gRPC) gets an id of our own.
_USABLE_REQUEST_ID = re.compile(r"[!-~]{1,128}")


def usable_request_id(value: str | None) -> str:
    """`value` when it can be a request id, else a new one."""
    return value if value is not None and _USABLE_REQUEST_ID.fullmatch(value) else uuid.uuid4().hex


class _Call:
    """One call being observed: its request id set for the call's task, its outcome counted once at the end."""

    def __init__(self, method: str, metadata: dict[str, str]) -> None:
        self.method = method
        self.id = usable_request_id(metadata.get(REQUEST_ID_HEADER))
        self.started = time.perf_counter()
        self._token = request_id.set(self.id)
        RPC_IN_FLIGHT.labels(method).inc()

    def end(self, code: str) -> None:
        seconds = time.perf_counter() - self.started
        RPC_IN_FLIGHT.labels(self.method).dec()
        RPC_REQUESTS.labels(self.method, code).inc()
        RPC_DURATION.labels(self.method).observe(seconds)
        log.info(
            "rpc",
            extra={
                "method": self.method,
                "code": code,
                "milliseconds": round(seconds * 1000, 1),
                "request_id": self.id,
            },
        )
        # A stream its client abandoned is closed from another context, where the reset cannot apply; the call's
        # own context goes with its task anyway.
        with contextlib.suppress(ValueError):
            request_id.reset(self._token)


@contextlib.contextmanager
def _observing(method: str, context: grpc.aio.ServicerContext) -> Iterator[None]:
    """One call, unary or stream: its request id and span for the body of the block, its outcome counted at the
    end however the block ends."""
    metadata = dict(context.invocation_metadata() or ())
    call = _Call(method, metadata)
    span = start_server_span(method, metadata, **{"rpc.system": "grpc"})
    error: BaseException | None = None
    try:
        yield
    except BaseException as raised:
        error = raised
        raise
    finally:
        code = _code_of(context, error)
        span.set_attribute("rpc.grpc.status_code", code)
        if code != "OK":
            span.set_status(Status(StatusCode.ERROR, code))
        call.end(code)
        span.end()


def _observe_unary(behavior: Callable[..., Awaitable[Any]], method: str) -> Callable[..., Awaitable[Any]]:
    async def handler(request: Any, context: grpc.aio.ServicerContext) -> Any:
        with _observing(method, context):
            return await behavior(request, context)

    return handler


def _observe_stream(behavior: Callable[..., AsyncIterator[Any]], method: str) -> Callable[..., AsyncIterator[Any]]:
    async def handler(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        with _observing(method, context):
            async for response in behavior(request, context):
                yield response

    return handler


class ObserveInterceptor(HandlerInterceptor):
    def wrap(self, handler: grpc.RpcMethodHandler, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method = details.method
        if method.startswith("/grpc."):  # health checks and reflection: noise
            return handler
        return with_behaviour(
            handler,
            unary=functools.partial(_observe_unary, method=method),
            stream=functools.partial(_observe_stream, method=method),
        )
