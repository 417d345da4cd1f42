"""Server interceptors replace a handler's behaviour and keep its codecs; this is how, in one place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc


def with_behaviour(
    handler: grpc.RpcMethodHandler,
    *,
    unary: Callable[..., Any],
    stream: Callable[..., Any],
    otherwise: Callable[..., Any] | None = None,
    request_deserializer: Callable[[bytes], Any] | None = None,
) -> grpc.RpcMethodHandler:
    """`handler` with `unary` in place of a unary-unary behaviour or `stream` in place of a unary-stream one, the
    same (de)serializers. Client- and bidi-streaming RPCs (reflection's, say) are not part of the API: such a
    handler is returned as it is, or, with `otherwise`, answered by that unary behaviour. `request_deserializer`
    replaces the handler's own."""
    codecs = {
        "request_deserializer": request_deserializer or handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(unary, **codecs)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(stream, **codecs)
    if otherwise is not None:
        return grpc.unary_unary_rpc_method_handler(otherwise, **codecs)
    return handler
