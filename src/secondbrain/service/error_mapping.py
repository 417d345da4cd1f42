"""The one place domain errors become gRPC statuses.

A server interceptor wraps every handler: a `SecondbrainError` becomes its status code with its message, and so does a
lost database connection (UNAVAILABLE, saying so); any other exception is logged with its traceback and becomes
INTERNAL with an id to find it in the log. Aborts raised by a handler itself (`context.abort`) and cancellations pass
through untouched.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from secondbrain.db.database import lost_database
from secondbrain.errors import (
    ConfigError,
    FailedPrecondition,
    InvalidInput,
    NotBuiltYet,
    NotFound,
    ResourceExhausted,
    SecondbrainError,
    Unavailable,
)
from secondbrain.service.handlers import with_behaviour

log = logging.getLogger(__name__)

STATUS_OF: dict[type[SecondbrainError], grpc.StatusCode] = {
    InvalidInput: grpc.StatusCode.INVALID_ARGUMENT,
    NotFound: grpc.StatusCode.NOT_FOUND,
    FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    ConfigError: grpc.StatusCode.FAILED_PRECONDITION,
    Unavailable: grpc.StatusCode.UNAVAILABLE,
    ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    NotBuiltYet: grpc.StatusCode.UNIMPLEMENTED,
}


def status_for(error: SecondbrainError) -> grpc.StatusCode:
    for kind in type(error).__mro__:
        if kind in STATUS_OF:
            return STATUS_OF[kind]
    return grpc.StatusCode.INTERNAL


async def _abort_for(error: Exception, context: grpc.aio.ServicerContext, method: str) -> None:
    if not isinstance(error, SecondbrainError) and (lost := lost_database(error)) is not None:
        error = lost
    if isinstance(error, SecondbrainError):
        code = status_for(error)
        log.info("request failed", extra={"method": method, "code": code.name, "error": str(error)})
        await context.abort(code, str(error))
    incident = uuid.uuid4().hex[:12]
    log.exception("unexpected error", extra={"method": method, "incident": incident})
    await context.abort(grpc.StatusCode.INTERNAL, f"internal error (incident {incident}); the server log has details")


def _wrap_unary(behavior: Callable[..., Awaitable[Any]], method: str) -> Callable[..., Awaitable[Any]]:
    async def handler(request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return await behavior(request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _abort_for(error, context, method)

    return handler


def _wrap_stream(behavior: Callable[..., AsyncIterator[Any]], method: str) -> Callable[..., AsyncIterator[Any]]:
    async def handler(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        try:
            async for response in behavior(request, context):
                yield response
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _abort_for(error, context, method)

    return handler


class ErrorMappingInterceptor(grpc.aio.ServerInterceptor):
    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method
        return with_behaviour(
            handler,
            unary=_wrap_unary(handler.unary_unary, method),
            stream=_wrap_stream(handler.unary_stream, method),
        )
