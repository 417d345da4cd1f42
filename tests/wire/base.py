"""What every wire server shares: lifecycle, request recording, scripted answers, SSE writing, disconnect tracking.

The servers differ only in their routes and in the JSON and SSE frames of their protocol; everything about *how* a
scripted reply reaches the client (an error status, a delay, a stream cut by an error event or by a dropped
connection) lives here once, so every protocol misbehaves in the same, predictable way.

Disconnects are counted from two signals, because either one alone misses cases: aiohttp cancels the handler task
when the connection is lost (`handler_cancellation=True`; that catches a client that leaves while the server sleeps
between deltas), and a write to a closed transport raises `ConnectionResetError` (a client that leaves while the
server writes). Each request counts at most once, and connections the server itself drops or closes at shutdown do
not count. A client can only be seen leaving while its answer is still being produced: with `delay=0` a short stream
is already in the socket buffers before the client reads its first delta, so tests of cancellation set a delay.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from .script import RecordedRequest, Reply, Script

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ErrorBody = Callable[[Reply], Any]
"""Builds a protocol's JSON error body for a reply with a non-200 status."""

_DROPPED = web.RequestKey("wire_dropped", bool)
_GONE = web.RequestKey("wire_client_gone", bool)


def sse_frame(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; `data` is JSON-encoded unless it is already a string (such as OpenAI's `[DONE]`)."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


@dataclass(frozen=True)
class SSEPlan:
    """The frames of one complete streamed answer, in protocol order; `answer_sse` decides how much is sent."""

    opening: Sequence[bytes]
    delta: Callable[[str], bytes]
    closing: Sequence[bytes]
    failure: bytes
    """The protocol's in-stream error event, sent instead of the rest when `Reply.fail_after` is reached."""


def scripted_error(reply: Reply, body: ErrorBody) -> web.Response | None:
    """The error response a reply with a non-200 status scripts, or None when the request should succeed."""
    if reply.status == 200:
        return None
    return web.json_response(body(reply), status=reply.status, headers=reply.headers)


async def json_body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object; anything else is the 400 a real API would give, not a 500 from the stand-in."""
    try:
        body = await request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text="request body must be a JSON object")
    return body


def _cut(limit: int | None, deltas: int) -> int | None:
    return None if limit is None else max(0, min(limit, deltas))


class WireServer:
    """An aiohttp application on 127.0.0.1, port 0, inside the caller's event loop.

    Subclasses list their routes in `routes()` and build answers with `answer_json` and `answer_sse`.
    """

    def __init__(self) -> None:
        self.script = Script()
        self.requests: list[RecordedRequest] = []
        self.disconnects = 0
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._stopping = False

    def routes(self) -> list[web.RouteDef]:
        raise NotImplementedError

    @property
    def root_url(self) -> str:
        """`http://127.0.0.1:PORT`, without a path."""
        if self._port is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return f"http://127.0.0.1:{self._port}"

    @property
    def base_url(self) -> str:
        """What the matching client takes as its base URL; the root unless a protocol's SDK expects a prefix."""
        return self.root_url

    async def start(self, port: int = 0) -> None:
        """Listen on 127.0.0.1:`port` (0: any free port; a fixed one lets a restarted server keep its address)."""
        app = web.Application(middlewares=[self._track])
        app.add_routes(self.routes())
        # A short shutdown grace: a test that abandons a slow stream must not hold its teardown for a minute.
        runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port)
        await site.start()
        self._runner = runner
        self._port = runner.addresses[0][1]
        self._stopping = False

    async def stop(self) -> None:
        if self._runner is None:
            return
        self._stopping = True
        await self._runner.cleanup()
        self._runner = None
        self._port = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    @web.middleware
    async def _track(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.requests.append(await _record(request))
        try:
            return await handler(request)
        except asyncio.CancelledError:
            self._client_gone(request)
            raise

    def _client_gone(self, request: web.Request) -> None:
        if self._stopping or request.get(_DROPPED) or request.get(_GONE):
            return
        request[_GONE] = True
        self.disconnects += 1

    def _drop(self, request: web.Request) -> None:
        """Closes the connection without finishing the response, as a crashed upstream or proxy would."""
        request[_DROPPED] = True
        if request.transport is not None:
            request.transport.abort()

    async def answer_json(self, request: web.Request, reply: Reply, body: Any, *, waits: int = 1) -> web.StreamResponse:
        """A non-streaming answer: sleeps `waits` delays, then sends `body`, or drops the connection instead."""
        if reply.delay:
            await asyncio.sleep(reply.delay * waits)
        if reply.drop_after is not None:
            self._drop(request)
            return web.Response()  # never reaches the client; aiohttp ignores the closed transport
        return web.json_response(body, headers=reply.headers)

    async def answer_sse(self, request: web.Request, reply: Reply, plan: SSEPlan) -> web.StreamResponse:
        """Streams `plan` for `reply`, cut short by `fail_after` (error event) or `drop_after` (closed connection)."""
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", **reply.headers}
        )
        fail_at = _cut(reply.fail_after, len(reply.deltas))
        drop_at = _cut(reply.drop_after, len(reply.deltas))
        sent = min(cut for cut in (fail_at, drop_at, len(reply.deltas)) if cut is not None)
        try:
            await response.prepare(request)
            for frame in plan.opening:
                await response.write(frame)
            for delta in reply.deltas[:sent]:
                if reply.delay:
                    await asyncio.sleep(reply.delay)
                await response.write(plan.delta(delta))
            if sent == fail_at:
                await response.write(plan.failure)
            elif sent == drop_at:
                self._drop(request)
                return response
            else:
                for frame in plan.closing:
                    await response.write(frame)
            await response.write_eof()
        except ConnectionResetError:
            self._client_gone(request)
        return response


async def _record(request: web.Request) -> RecordedRequest:
    raw = await request.read()  # aiohttp keeps the body, so the handler can read it again
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    headers = {name.lower(): value for name, value in request.headers.items()}
    return RecordedRequest(method=request.method, path=request.path, headers=headers, json=body)
