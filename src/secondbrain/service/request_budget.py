"""How many megabytes of large requests a process reads and handles at once (issue 47, friction 4: 20 concurrent
15 MB `UpsertNote` calls, with the token, took ingest from 331 MB to 1.33 GB, 566 MB of it held after, each request
read, parsed and copied at the same time).

gRPC reads and parses a unary request before its handler runs, so a bound in the handler comes too late. A method
whose requests may be megabytes (`limits.metered`) is served as client streaming instead (the wire is the same, so a
caller cannot tell; `handlers.without_reading` does the same to refuse a call cheaply): its handler first reserves
the method's largest request from the process's budget (`limits.REQUEST_BYTES_IN_FLIGHT`), waiting while the budget
is spent, and only then reads the message; once it is read, the call keeps the request's own size until it ends. A
call waiting costs its stream and at most one flow-control window of its request, however many wait; each waits
within its deadline, and one that is cancelled leaves the queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
from google.protobuf.message import Message

from secondbrain.service.handlers import Behaviour, HandlerInterceptor
from secondbrain.service.limits import REQUEST_BYTES_IN_FLIGHT, metered, request_limit


class ByteBudget:
    """Bytes handed out to calls, at most `total` at once (though a call larger than `total` alone gets it)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self._changed: asyncio.Condition | None = None  # made on first use, in the server's event loop

    @property
    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def reserve(self, size: int) -> None:
        async with self._condition:
            await self._condition.wait_for(lambda: self.used == 0 or self.used + size <= self.total)
            self.used += size

    async def release(self, size: int) -> None:
        async with self._condition:
            self.used -= size
            self._condition.notify_all()


class RequestBudgetInterceptor(HandlerInterceptor):
    """Serves each metered method's calls within one budget of bytes in flight (see the module's docstring). Placed
    inside the token check (a call without the token is refused before it waits or is read) and outside the error
    mapping, whose handler it runs once the request is read."""

    def __init__(self, total: int = REQUEST_BYTES_IN_FLIGHT) -> None:
        self.budget = ByteBudget(total)

    def wrap(self, handler: grpc.RpcMethodHandler, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        if handler.unary_unary is None or not metered(details.method):
            return handler
        return grpc.stream_unary_rpc_method_handler(
            self._within_budget(handler.unary_unary, request_limit(details.method)),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )

    def _within_budget(self, behaviour: Behaviour, largest: int) -> Behaviour:
        async def run(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
            held = largest
            await self.budget.reserve(held)
            try:
                request = await anext(requests, None)
                if request is None:  # the client closed its side without a message: nothing to answer
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the call carried no request message")
                # A unary caller ends its side with the message; reading that end finishes gRPC's reader, which
                # would otherwise keep the message as long as gRPC keeps the call's state (after it has ended).
                await anext(requests, None)
                # Keep what the request takes, and give the rest of the reservation back to the calls waiting.
                # (A request the error mapping refuses, oversized or undecodable, is not a message: it keeps none.)
                size = min(request.ByteSize(), largest) if isinstance(request, Message) else 0
                await self.budget.release(held - size)
                held = size
                return await behaviour(request, context)
            except BaseException as error:
                # gRPC keeps a finished call's state for a while, and with it the error that ended the call, whose
                # traceback holds every frame it passed through and their locals: the request and the copies made
                # of it (20 refused 15 MB upserts kept 700 MB alive). The frames are of no use once the call is over.
                _forget_frames(error)
                request = None
                raise
            finally:
                await asyncio.shield(self.budget.release(held))

        return run


def _forget_frames(error: BaseException) -> None:
    """Drop the tracebacks of `error` and of the errors it was raised from or during (an abort raised while an
    error was handled carries that error as its context)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.__traceback__ = None
        current = current.__cause__ or current.__context__
