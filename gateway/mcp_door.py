"""The note tools over MCP's streamable HTTP at `/mcp`, behind Envoy: the same server `secondbrain mcp` runs over
stdio, calling the services through the shim's own channels (so with the API token when one is configured; the
shim's TokenGuard asks callers for it too).

Stateless: each POST is a session of its own, so any shim replica can answer any request and nothing is held
between requests.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.types import ASGIApp, Receive, Scope, Send

from secondbrain.chat.v1 import chat_service_pb2_grpc as chat_grpc
from secondbrain.gateway.backends import Backends
from secondbrain.gateway.http_errors import error_response
from secondbrain.mcp_server import build_server
from secondbrain.note_tools import NoteServices
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc


class McpDoor:
    """An ASGI endpoint; `running()` (in the app's lifespan, the serving event loop) starts the SDK's session
    manager over stubs on the backends' channels."""

    def __init__(self, backends: Backends) -> None:
        self.backends = backends
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
        await self._app(scope, receive, send)
