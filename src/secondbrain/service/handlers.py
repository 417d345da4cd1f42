"""Server interceptors replace a handler's behaviour and keep its codecs; this is how, in one place."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc

Behaviour = Callable[..., Any]
# What an interceptor does to a behaviour: takes the handler's own, returns the one to run instead.
Wrapper = Callable[[Behaviour], Behaviour]


def with_behaviour(
    handler: grpc.RpcMethodHandler,
    *,
    unary: Wrapper,
    stream: Wrapper,
    request_deserializer: Callable[[bytes], Any] | None = None,
) -> grpc.RpcMethodHandler:
    """`handler`, of the same kind and with the same codecs, its behaviour passed through `unary` when it answers
    with one message (unary-unary, client streaming) or through `stream` when it answers with a stream
    (server streaming, bidi). Either wrapper receives the request as the handler would: a message, or for a
    client-streaming kind the iterator of messages. `request_deserializer` replaces the handler's own."""
    codecs = {
        "request_deserializer": request_deserializer or handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(unary(handler.unary_unary), **codecs)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(stream(handler.unary_stream), **codecs)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(unary(handler.stream_unary), **codecs)
    return grpc.stream_stream_rpc_method_handler(stream(handler.stream_stream), **codecs)


def without_reading(handler: grpc.RpcMethodHandler, *, unary: Behaviour, stream: Behaviour) -> grpc.RpcMethodHandler:
    """A handler for `handler`'s method that runs `unary` (one answer) or `stream` (a stream of answers) without
    ever reading the request: `(request_iterator, context)`, where the iterator is not touched.

    For refusing a call cheaply. grpc reads and parses a unary request before its behaviour runs, however large it
    is (up to the server's message limit); a client-streaming behaviour gets an iterator instead, and a message
    nobody iterates is never received, so a refused 15 MB request costs no more than its first flow-control window.
    The wire is the same for either kind, so the caller cannot tell."""
    codecs = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_stream is not None or handler.stream_stream is not None:
        return grpc.stream_stream_rpc_method_handler(stream, **codecs)
    return grpc.stream_unary_rpc_method_handler(unary, **codecs)


class HandlerInterceptor(grpc.aio.ServerInterceptor):
    """A server interceptor that only replaces the handler a call resolves to: `wrap` gets the handler (never None:
    an unknown method is left to gRPC's own UNIMPLEMENTED) and the call's details, and returns the handler to run."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        return handler if handler is None else self.wrap(handler, handler_call_details)

    def wrap(self, handler: grpc.RpcMethodHandler, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        raise NotImplementedError
