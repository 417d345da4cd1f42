"""The REST + SSE shim: an ASGI app that is only a gRPC client.

Each endpoint of `endpoints.ENDPOINTS` fills its RPC's request from the path, body or query, calls the service,
and answers with the response as JSON, or, for a streaming RPC, as server-sent events. It holds no business logic:
everything a request means is decided by the service it calls. A client that goes away cancels the gRPC call, so
an abandoned chat turn stops its LLM stream and stores what it had.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import message_factory
from google.protobuf.message import Message
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as AsgiMessage

from secondbrain.errors import InvalidInput
from secondbrain.gateway.endpoints import ENDPOINTS, Endpoint
from secondbrain.gateway.http_errors import HTTP_STATUS, RETRYABLE, error_body
from secondbrain.gateway.openapi import openapi_document
from secondbrain.gateway.proto_json import from_json, from_query, to_json
from secondbrain.service.auth import HEADER, REFUSED, open_channel, token_matches
from secondbrain.service.observe import HTTP_DURATION, HTTP_REQUESTS
from secondbrain.service.tracing import server_span

log = logging.getLogger(__name__)

# Unary calls answer at once; this only bounds a service that hangs.
UNARY_TIMEOUT_SECONDS = 30.0
# A comment line this often keeps proxies from closing a quiet stream, and notices a client that left.
KEEPALIVE_SECONDS = 15.0
MAX_BODY_BYTES = 1024 * 1024
# The whole body must arrive within this, however steadily it trickles: a client that sends a byte now and then
# would otherwise hold a connection (and a request's worth of memory) for as long as it likes.
BODY_TIMEOUT_SECONDS = 10.0
CONTENT_TOO_LARGE = 413
REQUEST_TIMEOUT = 408
REQUEST_ID = "x-request-id"
# What `/api/` serves without the token: the API's description holds no data, and a client needs it to learn
# how to authenticate. (The UI's static files are outside `/api/` and open too: they hold no data either.)
OPEN_API_PATHS = frozenset({"/api/openapi.json"})
# The built UI loads one script and one stylesheet from its own origin and calls only that origin (grpc-web and
# /api/), with nothing inline; nothing the shim serves may be framed, and a JSON body cannot turn into a page.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}
_END = object()
# What a gRPC channel says when nothing listens at the address.
_UNREACHABLE = ("failed to connect", "connection refused", "connections to all backends failing", "dns resolution")

UI_NOT_BUILT = """<!doctype html>
<meta charset="utf-8"><title>secondbrain</title>
<h1>secondbrain</h1>
<p>The web UI has not been built. The REST API is at <a href="/api/openapi.json">/api/openapi.json</a>;
gRPC and grpc-web are served on this same address.</p>
"""


@dataclass
class Backends:
    """The services' addresses, and one channel to each, opened on first use in the serving event loop."""

    addresses: Mapping[str, str]
    token: str | None
    _channels: dict[str, grpc.aio.Channel] = field(default_factory=dict)

    def channel(self, service: str) -> grpc.aio.Channel:
        if service not in self._channels:
            self._channels[service] = open_channel(self.addresses[service], self.token)
        return self._channels[service]

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close()


class HttpError(Exception):
    def __init__(self, code: grpc.StatusCode, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def _error_response(
    code: grpc.StatusCode, message: str, headers: Mapping[str, str] | None = None, status: int | None = None
) -> JSONResponse:
    status = status or HTTP_STATUS.get(code, 500)
    return JSONResponse(error_body(code, message, status), status_code=status, headers=headers)


def _not_found(path: str) -> JSONResponse:
    message = f"nothing is served at {path}; the API is listed at /api/openapi.json"
    return _error_response(grpc.StatusCode.NOT_FOUND, message)


def _from_rpc_error(error: grpc.aio.AioRpcError, endpoint: Endpoint, backends: Backends) -> HttpError:
    code, details = error.code(), error.details() or ""
    if code == grpc.StatusCode.UNAVAILABLE and any(sign in details.lower() for sign in _UNREACHABLE):
        address = backends.addresses[endpoint.service]
        details = (
            f"the {endpoint.service} service is not answering at {address}: start it (`secondbrain up` runs "
            "everything), then try again"
        )
    return HttpError(code, details or code.name)


async def _body_within_limits(request: Request, within: float) -> bytes:
    """The body, refused as soon as it is known to be over MAX_BODY_BYTES: from its declared length before reading
    any of it, else while it streams in, so an endless body costs at most the limit; and refused when it is not all
    in after `within` seconds, however steadily it trickles."""
    too_large = HttpError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        f"the request body is over {MAX_BODY_BYTES // 1024 // 1024} MiB ({MAX_BODY_BYTES} bytes): send a smaller one",
        CONTENT_TOO_LARGE,
    )
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large
    body = bytearray()
    try:
        async with asyncio.timeout(within):
            async for part in request.stream():
                body += part
                if len(body) > MAX_BODY_BYTES:
                    raise too_large
    except TimeoutError:
        raise HttpError(
            grpc.StatusCode.DEADLINE_EXCEEDED,
            f"the request body did not all arrive within {within:g} s: send it in one go",
            REQUEST_TIMEOUT,
        ) from None
    return bytes(body)


async def _request_message(request: Request, endpoint: Endpoint, body_timeout: float) -> Message:
    message = message_factory.GetMessageClass(endpoint.request)()
    if endpoint.has_body:
        raw = await _body_within_limits(request, body_timeout)
        try:
            data = json.loads(raw) if raw.strip() else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise InvalidInput(f"the request body is not valid JSON: {error}") from None
        except RecursionError:
            # The parser recurses once per level. (The conversion after it cannot go as deep: json_format stops
            # at 100 levels of messages, and no field of ours takes arbitrary JSON.)
            raise InvalidInput(
                "the request body is nested too deeply to read (hundreds of levels of arrays or objects); "
                "no request needs more than a few"
            ) from None
        from_json(data, message, "request body")
        if request.method == "PATCH":
            _mask_from_body(message, data)
    else:
        params = {key: request.query_params.getlist(key) for key in request.query_params}
        from_json(from_query(params, endpoint.request), message, "query")
    for name in endpoint.path_parameters:
        setattr(message, name, request.path_params[name])
    return message


def _mask_from_body(message: Message, data: dict[str, Any]) -> None:
    """PATCH changes what the body names: without an explicit updateMask, the mask is the body's fields (as
    grpc-gateway does), so `{"title": "x"}` renames and leaves the rest alone."""
    fields = message.DESCRIPTOR.fields_by_name
    if "update_mask" not in fields or message.HasField("update_mask"):  # type: ignore[arg-type]
        return
    by_json_name = {field.json_name: field.name for field in message.DESCRIPTOR.fields}
    named = [by_json_name.get(key, key) for key in data]
    message.update_mask.paths.extend(name for name in named if name in fields)


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    # json.dumps escapes newlines, so each event's data is one line.
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


def _event_frame(message: Message) -> bytes:
    kind = message.WhichOneof("event")
    if kind is None:
        return b": an empty event was skipped\n\n"
    return _sse(kind, to_json(getattr(message, kind)))


async def _stream_events(
    call: grpc.aio.UnaryStreamCall, first: Message, endpoint: Endpoint, backends: Backends
) -> AsyncIterator[bytes]:
    """The call's messages as SSE frames, keepalive comments between them; a failure mid-stream becomes an
    `error` event. However this generator ends (a client that left included), the gRPC call is cancelled."""
    queue: asyncio.Queue[object] = asyncio.Queue()

    async def pump() -> None:
        try:
            while (message := await call.read()) is not grpc.aio.EOF:
                await queue.put(message)
            await queue.put(_END)
        except grpc.aio.AioRpcError as error:
            await queue.put(error)

    reader = asyncio.create_task(pump())
    try:
        yield _event_frame(first)
        while True:
            try:
                # asyncio.timeout rather than wait_for, which on Python 3.11 can swallow a client's cancel.
                async with asyncio.timeout(KEEPALIVE_SECONDS):
                    item = await queue.get()
            except TimeoutError:
                yield b": keepalive\n\n"
                continue
            if item is _END:
                return
            if isinstance(item, grpc.aio.AioRpcError):
                failure = _from_rpc_error(item, endpoint, backends)
                yield _sse(
                    "error",
                    {"code": failure.code.name, "message": failure.message, "retryable": failure.code in RETRYABLE},
                )
                return
            assert isinstance(item, Message)
            yield _event_frame(item)
    finally:
        call.cancel()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
            await reader


def _handler(endpoint: Endpoint, backends: Backends, body_timeout: float) -> Callable[[Request], Awaitable[Response]]:
    response_class = message_factory.GetMessageClass(endpoint.response)
    request_class = message_factory.GetMessageClass(endpoint.request)

    async def observed(request: Request) -> Response:
        started = time.perf_counter()
        with server_span(f"{endpoint.method} {endpoint.path}", request.headers, **{"http.route": endpoint.path}):
            response = await handle(request)
        HTTP_REQUESTS.labels(endpoint.path, str(response.status_code)).inc()
        HTTP_DURATION.labels(endpoint.path).observe(time.perf_counter() - started)
        return response

    async def handle(request: Request) -> Response:
        request_id = request.headers.get(REQUEST_ID) or uuid.uuid4().hex
        headers = {REQUEST_ID: request_id}
        # The client's address for chat's per-client limit: what Envoy recorded, else the peer the shim sees.
        forwarded = request.headers.get("x-forwarded-for") or (request.client.host if request.client else "")
        # (The trace context goes on through the channel's own interceptor: chat's span becomes the shim's child.)
        metadata = ((REQUEST_ID, request_id), ("x-forwarded-for", forwarded))
        channel = backends.channel(endpoint.service)
        try:
            message = await _request_message(request, endpoint, body_timeout)
            if not endpoint.streams:
                unary = channel.unary_unary(
                    endpoint.grpc_path,
                    request_serializer=request_class.SerializeToString,
                    response_deserializer=response_class.FromString,
                )
                reply = await unary(message, timeout=UNARY_TIMEOUT_SECONDS, metadata=metadata)
                return JSONResponse(to_json(reply), headers=headers)
            stream = channel.unary_stream(
                endpoint.grpc_path,
                request_serializer=request_class.SerializeToString,
                response_deserializer=response_class.FromString,
            )
            call = stream(message, metadata=metadata)
            try:
                # A request refused before the stream starts (no such conversation, say) is an HTTP error.
                first = await call.read()
            except BaseException:
                call.cancel()
                raise
            if first is grpc.aio.EOF:
                return StreamingResponse(iter(()), media_type="text/event-stream", headers=headers)
            return StreamingResponse(
                _stream_events(call, first, endpoint, backends),
                media_type="text/event-stream",
                # no-transform and X-Accel-Buffering keep proxies from holding events back.
                headers={**headers, "Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"},
            )
        except InvalidInput as error:
            return _error_response(grpc.StatusCode.INVALID_ARGUMENT, str(error), headers)
        except HttpError as error:
            if error.status == REQUEST_TIMEOUT:
                # The rest of the body may still be on its way: close rather than read it to find the next request.
                headers["connection"] = "close"
            return _error_response(error.code, error.message, headers, error.status)
        except ClientDisconnect:
            # Nobody is left to answer, and nothing went wrong here: one line, no traceback.
            log.info(
                "the client left before sending the whole request body",
                extra={"method": request.method, "path": request.url.path, "request_id": request_id},
            )
            return _error_response(grpc.StatusCode.CANCELLED, "the client left", headers)
        except grpc.aio.AioRpcError as error:
            failure = _from_rpc_error(error, endpoint, backends)
            return _error_response(failure.code, failure.message, headers)

    return observed


class SecurityHeaders:
    """Pure ASGI middleware: SECURITY_HEADERS on every response the shim sends, the UI's pages and the API's
    answers (errors and refusals included), unless a response set its own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: AsgiMessage) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)


class TokenGuard:
    """Pure ASGI middleware (it never buffers a stream): `/api/` needs the token when one is configured, except
    OPEN_API_PATHS; a preflight that reached here came from an origin Envoy does not allow, and is refused with the
    fix."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if request.method == "OPTIONS":
            origin = request.headers.get("origin", "(no origin)")
            response = _error_response(
                grpc.StatusCode.PERMISSION_DENIED,
                f"cross-origin requests from {origin} are not allowed: add it to SECONDBRAIN_CORS_ORIGINS "
                "(comma-separated) and restart the gateway",
            )
        elif (
            self.token
            and request.url.path.startswith("/api/")
            and request.url.path not in OPEN_API_PATHS
            and not token_matches(request.headers.get(HEADER), self.token)
        ):
            response = _error_response(
                grpc.StatusCode.UNAUTHENTICATED, REFUSED, headers={"WWW-Authenticate": 'Bearer realm="secondbrain"'}
            )
        else:
            await self.app(scope, receive, send)
            return
        await response(scope, receive, send)


def create_app(
    backends: Backends, token: str | None, ui_dir: Path | None = None, *, body_timeout: float = BODY_TIMEOUT_SECONDS
) -> ASGIApp:
    """The shim over `backends`; the built web UI from `ui_dir` under `/` when it exists."""
    document = openapi_document()

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    async def ui_not_built(request: Request) -> Response:
        return HTMLResponse(UI_NOT_BUILT)

    async def source_map(request: Request) -> Response:
        return _not_found(request.url.path)

    routes: list[BaseRoute] = [
        Route(endpoint.path, _handler(endpoint, backends, body_timeout), methods=[endpoint.method])
        for endpoint in ENDPOINTS
    ]
    routes += [
        Route("/api/openapi.json", openapi, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    if ui_dir is not None and (ui_dir / "index.html").is_file():
        # A source map is the UI's source, comments and all: not served, even from a build that made one.
        routes.append(Route("/{path:path}.map", source_map))
        routes.append(Mount("/", StaticFiles(directory=ui_dir, html=True)))
    else:
        routes.append(Route("/", ui_not_built, methods=["GET"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await backends.close()

    async def not_routed(request: Request, error: Exception) -> Response:
        path = request.url.path
        if getattr(error, "status_code", 404) == 405:
            body = error_body(grpc.StatusCode.UNIMPLEMENTED, f"{request.method} is not served at {path}")
            body["error"]["status"] = 405
            return JSONResponse(body, status_code=405)
        return _not_found(path)

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_routed, 405: not_routed})
    return SecurityHeaders(TokenGuard(app, token))
