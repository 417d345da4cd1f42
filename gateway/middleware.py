"""The shim's pure ASGI middlewares (they never buffer a stream): security headers on every response, the bearer
token in front of `/api/`, `/v1/` and `/mcp` (wrong ones counted per client), and the client each request is served
for."""

from __future__ import annotations

import math
from collections.abc import Sequence

import grpc
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as AsgiMessage

from secondbrain.gateway.endpoints import MCP_PATH, OPENAI_PREFIX
from secondbrain.gateway.http_errors import error_response
from secondbrain.gateway.openai_compat import error_response as openai_error
from secondbrain.service.auth import HEADER, REFUSED, token_matches
from secondbrain.service.client_address import FORWARDED_CLIENT, FORWARDED_FOR, Network, resolve_client
from secondbrain.service.token_guesses import TokenGuesses

# What `/api/` serves without the token: the API's description holds no data, and a client needs it to learn
# how to authenticate. (The UI's static files are outside `/api/` and open too: they hold no data either.)
OPEN_API_PATHS = frozenset({"/api/openapi.json"})
# The built UI loads one script and one stylesheet from its own origin and calls only that origin (grpc-web and
# /api/), with nothing inline; nothing the shim serves may be framed, and a JSON body cannot turn into a page.
# Images may also be blob: URLs: the reader shows a vault's images from the bytes GetAttachment read (over
# grpc-web, with the token), never from a URL of the vault's files.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


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
    """Pure ASGI middleware (it never buffers a stream): `/api/`, `/v1/` and `/mcp` need the token when one is set,
    except OPEN_API_PATHS; a preflight that reached here came from an origin Envoy does not allow, and is refused with
    the fix. Wrong tokens count against their client (`token_guesses`; the client is ClientAddress's, which runs
    first: behind Envoy, whom Envoy saw); a client over the limit is refused with 429 and Retry-After before its
    token is compared."""

    def __init__(self, app: ASGIApp, token: str | None, guesses: TokenGuesses | None = None) -> None:
        self.app = app
        self.token = token
        self.guesses = guesses or TokenGuesses()

    @staticmethod
    def _guarded(path: str) -> bool:
        return path.startswith(("/api/", OPENAI_PREFIX)) or path == MCP_PATH

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        path = request.url.path
        if request.method == "OPTIONS":
            origin = request.headers.get("origin", "(no origin)")
            response = error_response(
                grpc.StatusCode.PERMISSION_DENIED,
                f"cross-origin requests from {origin} are not allowed: add it to SECONDBRAIN_CORS_ORIGINS "
                "(comma-separated) and restart the gateway",
            )
        elif self.token and self._guarded(path) and path not in OPEN_API_PATHS:
            client = FORWARDED_CLIENT.get() or (scope["client"][0] if scope.get("client") else "unknown")
            presented = request.headers.get(HEADER)
            if seconds := self.guesses.refused_for(client):
                response = self._too_many(path, client, seconds)
            elif token_matches(presented, self.token):
                await self.app(scope, receive, send)
                return
            else:
                if presented is not None:
                    self.guesses.wrong(client)
                response = self._unauthenticated(path)
        else:
            await self.app(scope, receive, send)
            return
        await response(scope, receive, send)

    @staticmethod
    def _unauthenticated(path: str) -> Response:
        challenge = {"WWW-Authenticate": 'Bearer realm="secondbrain"'}
        if path.startswith(OPENAI_PREFIX):
            # An OpenAI client reads OpenAI's error shape.
            response = openai_error(401, REFUSED, "invalid_api_key")
            response.headers.update(challenge)
            return response
        return error_response(grpc.StatusCode.UNAUTHENTICATED, REFUSED, headers=challenge)

    def _too_many(self, path: str, client: str, seconds: float) -> Response:
        message = self.guesses.refusal_message(client, seconds)
        retry = {"Retry-After": str(math.ceil(seconds))}
        if path.startswith(OPENAI_PREFIX):
            response = openai_error(429, message, "rate_limit_exceeded")
            response.headers.update(retry)
            return response
        return error_response(grpc.StatusCode.RESOURCE_EXHAUSTED, message, headers=retry)


class ClientAddress:
    """Pure ASGI middleware: the client each request is served for (`client_address.resolve_client`: the peer, or whom a
    proxy of ours in `proxies` saw), set as FORWARDED_CLIENT while it is served, so every gRPC call made for it
    (REST, /v1, and the tools of /mcp alike) carries it to chat's per-client limit."""

    def __init__(self, app: ASGIApp, proxies: Sequence[Network], trusted_hops: int = 0) -> None:
        self.app = app
        self.proxies = tuple(proxies)
        self.trusted_hops = trusted_hops

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        peer = scope["client"][0] if scope.get("client") else "unknown"
        forwarded = Headers(scope=scope).get(FORWARDED_FOR)
        token = FORWARDED_CLIENT.set(resolve_client(peer, forwarded, self.proxies, self.trusted_hops))
        try:
            await self.app(scope, receive, send)
        finally:
            FORWARDED_CLIENT.reset(token)
