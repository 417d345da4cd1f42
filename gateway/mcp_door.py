"""The note tools over MCP's streamable HTTP at `/mcp`, behind Envoy: the same server `secondbrain mcp` runs over
stdio, calling the services through the shim's own channels (so with the API token when one is configured; the
shim's TokenGuard asks callers for it too).

Stateless: each POST is a session of its own, so any shim replica can answer any request and nothing is held
between requests. A POST's body is read here first, under the limits every door of the shim keeps (1 MiB, all of it
within the body timeout, or 413 and 408), and then handed to the SDK: it would wait for a slow body as long as the
client liked (found by a probe: 20 connections sending a byte a second were all still open after a minute).

Being stateless, it has nothing a GET's event stream could carry (a message of the server's own belongs to a
session), and a GET is answered 405, as the transport's specification allows a server without such a stream. The
SDK's own stream never closed, its pings every 15 s keeping it under Envoy's idle timeout, so each GET held a
connection and memory of the shim and of Envoy for ever (issue 47, friction 5: 300 of them, 25 MB of the shim and
16 MB of Envoy). The SDK's client opens no GET without a session, so it never asks.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.types import PARSE_ERROR
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from secondbrain.chat.v1 import chat_service_pb2_grpc as chat_grpc
from secondbrain.errors import InvalidInput
from secondbrain.gateway.backends import Backends
from secondbrain.gateway.http_errors import HttpError, error_response
from secondbrain.gateway.json_body import NumberTooLong, parse_json
from secondbrain.gateway.request_message import BODY_TIMEOUT_SECONDS, REQUEST_TIMEOUT, body_within_limits
from secondbrain.mcp_server import build_server
from secondbrain.note_tools import NoteServices
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc


class McpDoor:
    """An ASGI endpoint; `running()` (in the app's lifespan, the serving event loop) starts the SDK's session
    manager over stubs on the backends' channels."""

    def __init__(self, backends: Backends, body_timeout: float = BODY_TIMEOUT_SECONDS) -> None:
        self.backends = backends
        self.body_timeout = body_timeout
        self._app: ASGIApp | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        services = NoteServices(
            pb_grpc.RetrieveServiceStub(self.backends.channel("retrieve")),
            chat_grpc.ChatServiceStub(self.backends.channel("chat")),
        )
        manager = StreamableHTTPSessionManager(app=build_server(services), stateless=True)
        async with manager.run():
            self._app = StreamableHTTPASGIApp(manager)
            try:
                yield
            finally:
                self._app = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            response = error_response(grpc.StatusCode.UNAVAILABLE, "the MCP endpoint is starting or stopping")
            await response(scope, receive, send)
            return
        if scope["method"] == "GET":
            message = "this MCP endpoint is stateless and sends no message of its own: it has no event stream to open"
            response = error_response(grpc.StatusCode.UNIMPLEMENTED, message, {"allow": "POST"}, 405)
            await response(scope, receive, send)
            return
        if scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        try:
            body = await body_within_limits(Request(scope, receive), self.body_timeout)
        except HttpError as error:
            # A late body's rest may still be on its way: close rather than read it to find the next request.
            headers = {"connection": "close"} if error.status == REQUEST_TIMEOUT else None
            await error_response(error.code, error.message, headers, error.status)(scope, receive, send)
            return
        except ClientDisconnect:
            return
        try:
            # The SDK reads the body again; this reading only refuses, as every JSON door does, a number too long.
            parse_json(body, "MCP request")
        except NumberTooLong as error:
            refusal = {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": str(error)}}
            await JSONResponse(refusal, status_code=400)(scope, receive, send)
            return
        except InvalidInput:
            pass  # the SDK answers JSON-RPC's own parse error
        await self._app(scope, _replaying(body, receive), send)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body already read, whole, and then whatever comes next (a disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay
