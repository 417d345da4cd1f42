"""The one place domain errors become gRPC statuses.

A server interceptor wraps every handler: a `SecondbrainError` becomes its status code with its message, and so do a
lost database connection (UNAVAILABLE, saying so) and a query the database gave up on (DEADLINE_EXCEEDED); any other
exception is logged with its traceback and becomes INTERNAL with an id to find it in the log. Aborts raised by a
handler itself (`context.abort`) and cancellations pass through untouched.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message

from secondbrain.db.database import database_gave_up, lost_database
from secondbrain.errors import (
    ConfigError,
    FailedPrecondition,
    InvalidInput,
    NotFound,
    ResourceExhausted,
    SecondbrainError,
    TimedOut,
    Unavailable,
)
from secondbrain.service.handlers import HandlerInterceptor, with_behaviour
from secondbrain.service.limits import describe, request_limit
from secondbrain.service.request_text import nul_field

log = logging.getLogger(__name__)

STATUS_OF: dict[type[SecondbrainError], grpc.StatusCode] = {
    InvalidInput: grpc.StatusCode.INVALID_ARGUMENT,
    NotFound: grpc.StatusCode.NOT_FOUND,
    FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    ConfigError: grpc.StatusCode.FAILED_PRECONDITION,
    Unavailable: grpc.StatusCode.UNAVAILABLE,
    ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    TimedOut: grpc.StatusCode.DEADLINE_EXCEEDED,
}


def status_for(error: SecondbrainError) -> grpc.StatusCode:
    for kind in type(error).__mro__:
        if kind in STATUS_OF:
            return STATUS_OF[kind]
    return grpc.StatusCode.INTERNAL


# A status's message travels in a trailer, percent-encoded, under the metadata size limit (8 KiB by default): a
# message that quotes a long input back ("'<60 KB>' is not a conversation id") would not fit, and the client would get
# RESOURCE_EXHAUSTED instead of the error. So it is cut to this many bytes of UTF-8 (at most 3 times as many sent).
MAX_DETAILS_BYTES = 1000


def details_of(error: Exception) -> str:
    """The error's message as a status carries it: whole when short, else cut, with an ellipsis."""
    message = str(error)
    encoded = message.encode("utf-8", "surrogatepass")
    if len(encoded) <= MAX_DETAILS_BYTES:
        return message
    return encoded[: MAX_DETAILS_BYTES - 3].decode("utf-8", "ignore") + "…"


async def _abort_for(error: Exception, context: grpc.aio.ServicerContext, method: str) -> None:
    if not isinstance(error, SecondbrainError) and (known := lost_database(error) or database_gave_up(error)):
        if isinstance(known, TimedOut):  # which statement ran out of time is for the log, not the caller
            log.warning("the database gave up on a request", extra={"method": method}, exc_info=error)
        error = known
    if isinstance(error, SecondbrainError):
        code, details = status_for(error), details_of(error)
        log.info("request failed", extra={"method": method, "code": code.name, "error": details})
        await context.abort(code, details)
    incident = uuid.uuid4().hex[:12]
    log.exception("unexpected error", extra={"method": method, "incident": incident})
    await context.abort(grpc.StatusCode.INTERNAL, f"internal error (incident {incident}); the server log has details")


@dataclass(frozen=True)
class Undecodable:
    """What a request that is not the RPC's message decodes to, so the handler can refuse it as INVALID_ARGUMENT
    (grpc itself would answer UNKNOWN, which says nothing to the caller)."""

    reason: str


@dataclass(frozen=True)
class Oversized:
    """What a request larger than its method takes decodes to: it is never parsed, and is refused as
    RESOURCE_EXHAUSTED."""

    size: int
    limit: int


def _tolerant(deserializer: Callable[[bytes], Any] | None, limit: int) -> Callable[[bytes], Any] | None:
    if deserializer is None:
        return None

    def decode(data: bytes) -> Any:
        if len(data) > limit:
            return Oversized(len(data), limit)
        try:
            return deserializer(data)
        except (DecodeError, UnicodeDecodeError) as error:
            return Undecodable(str(error))

    return decode


async def _refuse_malformed(request: Any, context: grpc.aio.ServicerContext, method: str) -> None:
    """Refuse a request that is not the RPC's message, is larger than the RPC takes, or holds text no service can
    store."""
    if isinstance(request, Oversized):
        log.info("oversized request", extra={"method": method, "bytes": request.size, "limit": request.limit})
        await context.abort(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"the request is {request.size:,} bytes, over the {describe(request.limit)} that "
            f"{method.rsplit('/', 1)[-1]} takes; send less (a shorter text, fewer history messages)",
        )
    if isinstance(request, Undecodable):
        log.info("undecodable request", extra={"method": method, "error": request.reason})
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"the request could not be decoded as {method.rsplit('/', 1)[-1]}'s message ({request.reason}); "
            "send it with the generated client of the service's .proto",
        )
    if isinstance(request, Message) and (field := nul_field(request)) is not None:
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"{field} contains a NUL character, which text cannot hold: remove it and send the request again",
        )


def _wrap_unary(behavior: Callable[..., Awaitable[Any]], method: str) -> Callable[..., Awaitable[Any]]:
    async def handler(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await _refuse_malformed(request, context, method)
        try:
            return await behavior(request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _abort_for(error, context, method)

    return handler


def _wrap_stream(behavior: Callable[..., AsyncIterator[Any]], method: str) -> Callable[..., AsyncIterator[Any]]:
    async def handler(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        await _refuse_malformed(request, context, method)
        try:
            async for response in behavior(request, context):
                yield response
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _abort_for(error, context, method)

    return handler


class ErrorMappingInterceptor(HandlerInterceptor):
    def wrap(self, handler: grpc.RpcMethodHandler, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method = details.method
        if handler.request_streaming:
            # Reflection's bidi stream (no API call streams its requests): its own codecs and errors.
            return handler
        return with_behaviour(
            handler,
            unary=functools.partial(_wrap_unary, method=method),
            stream=functools.partial(_wrap_stream, method=method),
            request_deserializer=_tolerant(handler.request_deserializer, request_limit(method)),
        )
