"""A server-streaming call as server-sent events: one event per stream message, named after its `event` oneof
field, keepalive comments between them, and a failure mid-stream as a last `error` event."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import grpc
from google.protobuf.message import Message
from starlette.responses import StreamingResponse

from secondbrain.gateway.http_errors import RETRYABLE, HttpError
from secondbrain.gateway.proto_json import to_json

# A comment line this often keeps proxies from closing a quiet stream, and notices a client that left.
KEEPALIVE_SECONDS = 15.0
_END = object()


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    # json.dumps escapes newlines, so each event's data is one line.
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


def _event_frame(message: Message) -> bytes:
    kind = message.WhichOneof("event")
    if kind is None:
        return b": an empty event was skipped\n\n"
    return _sse(kind, to_json(getattr(message, kind)))


async def stream_events(
    call: grpc.aio.UnaryStreamCall, first: Message, failure: Callable[[grpc.aio.AioRpcError], HttpError]
) -> AsyncIterator[bytes]:
    """The call's messages as SSE frames, keepalive comments between them; a failure mid-stream becomes an
    `error` event (what `failure` makes of it). However this generator ends (a client that left included), the gRPC
    call is cancelled."""
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
                error = failure(item)
                yield _sse(
                    "error", {"code": error.code.name, "message": error.message, "retryable": error.code in RETRYABLE}
                )
                return
            assert isinstance(item, Message)
            yield _event_frame(item)
    finally:
        call.cancel()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
            await reader


def event_stream(
    call: grpc.aio.UnaryStreamCall,
    first: Message | object,
    failure: Callable[[grpc.aio.AioRpcError], HttpError],
    headers: Mapping[str, str],
) -> StreamingResponse:
    """The response to a streaming call whose `first` message (or EOF) has arrived: its events as they come."""
    if first is grpc.aio.EOF:
        return StreamingResponse(iter(()), media_type="text/event-stream", headers=headers)
    assert isinstance(first, Message)
    return StreamingResponse(
        stream_events(call, first, failure),
        media_type="text/event-stream",
        # no-transform and X-Accel-Buffering keep proxies from holding events back.
        headers={**headers, "Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"},
    )
