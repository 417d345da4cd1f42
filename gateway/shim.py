"""The REST + SSE shim: an ASGI app that is only a gRPC client.

Each endpoint of `endpoints.ENDPOINTS` fills its RPC's request from the path, body or query, calls the service,
and answers with the response as JSON, or, for a streaming RPC, as server-sent events. It holds no business logic:
everything a request means is decided by the service it calls. A client that goes away cancels the gRPC call, so
an abandoned chat turn stops its LLM stream and stores what it had.

Its parts: `request_message` reads a request, `sse` answers a stream, `http_errors` says what went wrong,
`middleware` guards every response, `backends` holds the channels.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import grpc
from google.protobuf import message_factory
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Scope

from secondbrain.errors import InvalidInput
from secondbrain.gateway.backends import Backends
from secondbrain.gateway.endpoints import ENDPOINTS, MCP_PATH, OPENAI_PREFIX, Endpoint
from secondbrain.gateway.http_errors import HttpError, error_response, from_rpc_error, not_found
from secondbrain.gateway.local_requests import LocalRequestsOnly
from secondbrain.gateway.mcp_door import McpDoor
from secondbrain.gateway.middleware import ClientAddress, SecurityHeaders, TokenGuard
from secondbrain.gateway.openai_compat import OpenAICompat
from secondbrain.gateway.openapi import openapi_document
from secondbrain.gateway.proto_json import to_json
from secondbrain.gateway.request_message import BODY_TIMEOUT_SECONDS, REQUEST_TIMEOUT, request_message
from secondbrain.gateway.sse import event_stream
from secondbrain.service.auth import is_loopback
from secondbrain.service.client_address import LOOPBACK, Network, networks
from secondbrain.service.observe import HTTP_DURATION, HTTP_REQUESTS, usable_request_id
from secondbrain.service.tracing import server_span

log = logging.getLogger(__name__)

# Unary calls answer at once; this only bounds a service that hangs.
UNARY_TIMEOUT_SECONDS = 30.0
REQUEST_ID = "x-request-id"

UI_NOT_BUILT = """<!doctype html>
<meta charset="utf-8"><title>secondbrain</title>
<h1>secondbrain</h1>
<p>The web UI has not been built. The REST API is at <a href="/api/openapi.json">/api/openapi.json</a>;
gRPC and grpc-web are served on this same address.</p>
"""


# The UI's own addresses (ui/src/routes.ts): a reload or a shared link of /note/Projects/Kitchen.md gets the app,
# which reads the address itself. Anything else that is not a file stays a 404.
UI_ROUTES = ("/note/", "/browse", "/chat", "/status")


class _BuiltUI(StaticFiles):
    """The built UI's files, but never a source map: it is the UI's source, comments and all, and a build may
    leave one next to its bundle. The UI's routes are answered with its index.html."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        try:
            return await super().get_response(path, scope)
        except StarletteHTTPException as error:
            asked = scope["path"]
            routed = any(asked == prefix.rstrip("/") or asked.startswith(prefix) for prefix in UI_ROUTES)
            if error.status_code != 404 or not routed:
                raise
            return await super().get_response("index.html", scope)

    def file_response(
        self, full_path: str | os.PathLike[str], stat_result: os.stat_result, scope: Scope, status_code: int = 200
    ) -> Response:
        # Decided on the file about to be sent, as the static file server resolved it from the URL (its `.`, `..`,
        # empty and trailing segments dropped, symlinks followed), not on the URL: `app.js.map/`, `app.js.map%2F`
        # and `app.js.map/.` all resolve to `app.js.map`. Case folded, for a case-insensitive file system.
        if os.fspath(full_path).casefold().endswith(".map"):
            return not_found(scope["path"])
        return super().file_response(full_path, stat_result, scope, status_code)


def _handler(endpoint: Endpoint, backends: Backends, body_timeout: float) -> Callable[[Request], Awaitable[Response]]:
    response_class = message_factory.GetMessageClass(endpoint.response)
    request_class = message_factory.GetMessageClass(endpoint.request)

    def failure(error: grpc.aio.AioRpcError) -> HttpError:
        return from_rpc_error(error, endpoint.service, backends.addresses[endpoint.service])

    async def observed(request: Request) -> Response:
        started = time.perf_counter()
        with server_span(f"{endpoint.method} {endpoint.path}", request.headers, **{"http.route": endpoint.path}):
            response = await handle(request)
        HTTP_REQUESTS.labels(endpoint.path, str(response.status_code)).inc()
        HTTP_DURATION.labels(endpoint.path).observe(time.perf_counter() - started)
        return response

    async def handle(request: Request) -> Response:
        request_id = usable_request_id(request.headers.get(REQUEST_ID))
        headers = {REQUEST_ID: request_id}
        # (The client it is served for and the trace context go on through the channel's own interceptor: chat's
        # span becomes the shim's child.)
        metadata = ((REQUEST_ID, request_id),)
        channel = backends.channel(endpoint.service)
        try:
            message = await request_message(request, endpoint, body_timeout)
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
            return event_stream(call, first, failure, headers)
        except InvalidInput as error:
            return error_response(grpc.StatusCode.INVALID_ARGUMENT, str(error), headers)
        except HttpError as error:
            if error.status == REQUEST_TIMEOUT:
                # The rest of the body may still be on its way: close rather than read it to find the next request.
                headers["connection"] = "close"
            return error_response(error.code, error.message, headers, error.status)
        except ClientDisconnect:
            # Nobody is left to answer, and nothing went wrong here: one line, no traceback.
            log.info(
                "the client left before sending the whole request body",
                extra={"method": request.method, "path": request.url.path, "request_id": request_id},
            )
            return error_response(grpc.StatusCode.CANCELLED, "the client left", headers)
        except grpc.aio.AioRpcError as error:
            failed = failure(error)
            return error_response(failed.code, failed.message, headers)

    return observed


def create_app(
    backends: Backends,
    token: str | None,
    ui_dir: Path | None = None,
    *,
    body_timeout: float = BODY_TIMEOUT_SECONDS,
    proxies: Sequence[Network] = networks(LOOPBACK),
    trusted_hops: int = 0,
    metrics_open: bool = False,
) -> ASGIApp:
    """The shim over `backends`; the built web UI from `ui_dir` under `/` when it exists. `proxies` (and the
    `trusted_hops` in front of them) say whose `x-forwarded-for` names the client."""
    document = openapi_document()

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def metrics(request: Request) -> Response:
        # They need no token, so they are this machine's unless SECONDBRAIN_METRICS_HOST opens them (Envoy never
        # passes /metrics on; this is the shim's own port).
        peer = request.client.host if request.client else ""
        if not metrics_open and not is_loopback(peer):
            return JSONResponse(
                {
                    "error": "metrics are served to this machine only; set SECONDBRAIN_METRICS_HOST to serve them to "
                    "others"
                },
                status_code=403,
            )
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    async def ui_not_built(request: Request) -> Response:
        return HTMLResponse(UI_NOT_BUILT)

    routes: list[BaseRoute] = [
        Route(endpoint.path, _handler(endpoint, backends, body_timeout), methods=[endpoint.method])
        for endpoint in ENDPOINTS
    ]
    # The note tools for assistants (MCP over streamable HTTP): GET, POST and DELETE.
    mcp = McpDoor(backends, body_timeout)
    # And for chat front ends that speak OpenAI's API.
    openai = OpenAICompat(backends, body_timeout)
    routes += [
        Route(MCP_PATH, mcp),
        Route(f"{OPENAI_PREFIX}models", openai.models, methods=["GET"]),
        Route(f"{OPENAI_PREFIX}chat/completions", openai.completions, methods=["POST"]),
        Route("/api/openapi.json", openapi, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    if ui_dir is not None and (ui_dir / "index.html").is_file():
        # Browsers and tools that ask for the classic path get the UI's SVG icon.
        routes.append(Route("/favicon.ico", lambda _: RedirectResponse("/favicon.svg", 301), methods=["GET"]))
        routes.append(Mount("/", _BuiltUI(directory=ui_dir, html=True)))
    else:
        routes.append(Route("/", ui_not_built, methods=["GET"]))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with mcp.running():
                yield
        finally:
            await backends.close()

    async def not_routed(request: Request, error: Exception) -> Response:
        path = request.url.path
        if getattr(error, "status_code", 404) == 405:
            return error_response(
                grpc.StatusCode.UNIMPLEMENTED, f"{request.method} is not served at {path}", status=405
            )
        return not_found(path)

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_routed, 405: not_routed})
    # With a token, the token decides; without one, requests from this machine's own pages only (local_requests).
    guarded = TokenGuard(app if token else LocalRequestsOnly(app), token)
    return SecurityHeaders(ClientAddress(guarded, proxies, trusted_hops))
