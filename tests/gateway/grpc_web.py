"""A grpc-web client as small as the protocol: what a browser's grpc-web library sends and reads.

A request is one length-prefixed frame (flag 0, 4-byte big-endian length, the message) POSTed over HTTP/1.1 with
`content-type: application/grpc-web+proto`. The response body is a sequence of such frames: messages (flag 0), then
one trailer frame (flag 0x80) whose payload is the gRPC trailers as HTTP header lines. A call that fails before any
message may instead answer "trailers-only", with grpc-status in the HTTP headers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TypeVar

import httpx2
from google.protobuf.message import Message

CONTENT_TYPE = "application/grpc-web+proto"
M = TypeVar("M", bound=Message)


def frame(message: Message) -> bytes:
    payload = message.SerializeToString()
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


@dataclass
class GrpcWebReply:
    http_status: int
    headers: httpx2.Headers
    messages: list[bytes] = field(default_factory=list)
    trailers: dict[str, str] = field(default_factory=dict)
    # How many network reads delivered the body: a stream that arrives in pieces takes more than one.
    chunks: int = 0

    @property
    def grpc_status(self) -> int:
        return int(self.trailers.get("grpc-status", self.headers.get("grpc-status", "-1")))

    @property
    def grpc_message(self) -> str:
        return self.trailers.get("grpc-message", self.headers.get("grpc-message", ""))

    def decode(self, message_class: type[M]) -> list[M]:
        return [message_class.FromString(payload) for payload in self.messages]


class FrameReader:
    """Splits a grpc-web body into frames as its bytes arrive, however the network cuts them."""

    def __init__(self, reply: GrpcWebReply) -> None:
        self.reply = reply
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """Add `data`; the messages it completed (trailers go into the reply)."""
        self._buffer += data
        messages = []
        while len(self._buffer) >= 5:
            flag, length = self._buffer[0], int.from_bytes(self._buffer[1:5], "big")
            if len(self._buffer) < 5 + length:
                break
            payload = bytes(self._buffer[5 : 5 + length])
            del self._buffer[: 5 + length]
            if flag & 0x80:
                for line in payload.decode().split("\r\n"):
                    if line:
                        name, _, value = line.partition(":")
                        self.reply.trailers[name.strip().lower()] = value.strip()
            else:
                messages.append(payload)
        return messages

    def finish(self) -> None:
        assert not self._buffer, "the body ended part way through a frame"


async def stream(
    client: httpx2.AsyncClient, method_path: str, request: Message, headers: dict[str, str] | None = None
) -> AsyncIterator[tuple[GrpcWebReply, bytes | None]]:
    """POST `request` to `method_path` as grpc-web; yields (reply, message) as each message arrives, then
    (reply, None) once the body is read, the trailers in the reply."""
    async with client.stream(
        "POST",
        method_path,
        content=frame(request),
        headers={"content-type": CONTENT_TYPE, "x-grpc-web": "1", "accept": CONTENT_TYPE, **(headers or {})},
    ) as response:
        reply = GrpcWebReply(response.status_code, response.headers)
        reader = FrameReader(reply)
        async for chunk in response.aiter_raw():
            reply.chunks += 1
            for message in reader.feed(chunk):
                reply.messages.append(message)
                yield reply, message
        reader.finish()
        yield reply, None


async def call(
    client: httpx2.AsyncClient, method_path: str, request: Message, headers: dict[str, str] | None = None
) -> GrpcWebReply:
    """POST `request` to `method_path` as grpc-web and read the whole response, however many pieces it takes."""
    last = None
    async for reply, _ in stream(client, method_path, request, headers):
        last = reply
    assert last is not None
    return last
