"""The chat service's only way to retrieval: RetrieveService.Retrieve over gRPC, one call per turn.

Retrieval is its own service (its own process, its own embedder), so chat never imports the pipeline: it asks for the
passages as any client would. Every call has a deadline, and a retrieve service that is down or too slow becomes a
domain error saying what to start or check, which the turn turns into its error event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from secondbrain.chat.turn_input import Scope
from secondbrain.errors import (
    FailedPrecondition,
    InvalidInput,
    NotFound,
    ResourceExhausted,
    SecondbrainError,
    Unavailable,
)
from secondbrain.llm import ChatMessage
from secondbrain.note_tools import NoteServices
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.auth import open_channel
from secondbrain.service.convert import ROLE_VALUES
from secondbrain.v1 import retrieval_pb2 as common

# Condensing (6 s by default), embedding, search and an optional rerank (10 s) all fit in this.
DEFAULT_TIMEOUT_SECONDS = 30.0
# How long a turn waits for a refused connection to the retrieve service to come back before reporting it down.
RECONNECT_WAIT_SECONDS = 3.0

# What retrieve's own refusals mean here: the same kind of error, with retrieve's message.
_PASSED_THROUGH: dict[grpc.StatusCode, type[SecondbrainError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidInput,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
}


@dataclass(frozen=True)
class RetrieveOptions:
    """The knobs the chat settings control; anything else takes the retrieve service's defaults."""

    passages: int
    alternates: bool
    rerank: bool
    rerank_model: str
    # What the answer is written with: a follow-up is condensed by the same model.
    provider: str = ""
    model: str = ""


class RetrieveClient:
    """A channel to the retrieve service, opened on first use and shared by every turn (HTTP/2 multiplexes them)."""

    def __init__(
        self, address: str, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, token: str | None = None
    ) -> None:
        self.address = address
        self.timeout_seconds = timeout_seconds
        self._token = token
        self._channel: grpc.aio.Channel | None = None
        self._stub: pb_grpc.RetrieveServiceStub | None = None

    def _get_stub(self) -> pb_grpc.RetrieveServiceStub:
        # Created lazily: a grpc.aio channel belongs to the event loop it is made in, which is the server's.
        if self._stub is None:
            self._channel = open_channel(self.address, self._token)
            self._stub = pb_grpc.RetrieveServiceStub(self._channel)
        return self._stub

    def note_services(self) -> NoteServices:
        """The note tools' services, on this client's channel (an agent turn's tools call retrieval through it)."""
        return NoteServices(retrieve=self._get_stub())

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
        self._channel = None
        self._stub = None

    async def retrieve(
        self,
        query: str,
        history: Sequence[ChatMessage],
        scope: Scope,
        options: RetrieveOptions,
    ) -> common.RetrievalResult:
        """The whole retrieval (plan, numbered passages, timings) for one question. A cancelled turn cancels the
        call, and with it retrieve's work."""
        request = pb.RetrieveRequest(
            query=query,
            history=[common.HistoryMessage(role=ROLE_VALUES[m.role], content=m.content) for m in history],
            filters=common.RetrievalFilters(
                folders=list(scope.folders),
                tags=list(scope.tags),
                date_from=scope.date_from,
                date_to=scope.date_to,
                notes=list(scope.notes),
                file_types=list(scope.file_types),
            ),
            now=scope.now,
            options=pb.RetrieveOptions(
                max_passages=options.passages,
                alternates=options.alternates,
                rerank=options.rerank,
                rerank_model=options.rerank_model,
                answer_provider=options.provider,
                answer_model=options.model,
            ),
        )
        stub = self._get_stub()
        assert self._channel is not None
        # Whether the connection was up when the call was made: if it was, a refusal is retrieve's own answer (its
        # database is down, say) and is not tried again.
        was_ready = self._channel.get_state() == grpc.ChannelConnectivity.READY
        for attempt in (1, 2):
            result = common.RetrievalResult()
            try:
                async for event in stub.Retrieve(request, timeout=self.timeout_seconds):
                    kind = event.WhichOneof("event")
                    if kind == "plan":
                        result.plan.CopyFrom(event.plan)
                    elif kind == "passage":
                        result.passages.append(event.passage)
                    elif kind == "done":
                        result.timings.extend(event.done.timings)
                return result
            except grpc.aio.AioRpcError as error:
                # Retrieval only reads, so a call refused before any answer is tried once more when the connection
                # comes back within a moment: a retrieve service that restarted is not reported as down.
                nothing_yet = not result.HasField("plan") and not result.passages
                unavailable = error.code() == grpc.StatusCode.UNAVAILABLE
                if attempt == 1 and unavailable and nothing_yet and not was_ready and await self._reconnected():
                    continue
                raise self._domain_error(error) from None
        raise AssertionError("unreachable")

    async def _reconnected(self) -> bool:
        """Whether the channel connects again within RECONNECT_WAIT_SECONDS."""
        assert self._channel is not None
        try:
            async with asyncio.timeout(RECONNECT_WAIT_SECONDS):
                await self._channel.channel_ready()
        except TimeoutError:
            return False
        return True

    def _domain_error(self, error: grpc.aio.AioRpcError) -> SecondbrainError:
        code, details = error.code(), error.details() or ""
        if code == grpc.StatusCode.UNAVAILABLE:
            return Unavailable(
                f"the retrieve service at {self.address} is not answering ({details}): start it with "
                "`secondbrain serve retrieve` (or `secondbrain up`), then ask again"
            )
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return Unavailable(
                f"the retrieve service at {self.address} did not answer within {self.timeout_seconds:g} s: it may be "
                "overloaded or waiting on its embedder or reranker; check its log, then ask again"
            )
        kind = _PASSED_THROUGH.get(code)
        if kind is not None:
            return kind(f"retrieval refused the question: {details}")
        return Unavailable(f"retrieval failed ({code.name}: {details}); the retrieve service's log has details")
