"""The one interface to a chat model; retrying comes from `secondbrain.providers`, as for every provider."""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator

from secondbrain.errors import Unavailable
from secondbrain.llm.types import ChatRequest, StreamEvent, TextDelta, Usage
from secondbrain.providers import ProviderContext, RetryableFailure, RetryPolicy


class ChatProvider(ABC):
    """A chat model behind one interface. `stream()` yields `TextDelta`s, then exactly one `Usage`, or raises.

    Subclasses implement `_stream_once`, one attempt that translates its SDK's failures with
    `secondbrain.providers.errors` (and `broken_stream`); retrying lives here. Once text has been yielded nothing is
    retried: a failure after that raises, so a partial answer is never mistaken for a whole one.
    """

    def __init__(self, context: ProviderContext, retry: RetryPolicy | None = None) -> None:
        self.context = context
        self.retry = retry or RetryPolicy()

    @property
    def id(self) -> str:
        return self.context.provider_id

    @property
    def no_tools_reason(self) -> str:
        """Why this provider cannot call tools (so a tool-using turn runs without them); empty when it can."""
        return ""

    @abstractmethod
    def _stream_once(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """One attempt. Raise RetryableFailure for what may pass, a SecondbrainError for what will not."""

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        retries = self.retry.start()
        while True:
            streamed = False
            finished = False
            try:
                # aclosing: when the consumer stops early, close the attempt now (and with it the HTTP response),
                # not whenever the garbage collector gets to it.
                async with contextlib.aclosing(self._stream_once(request)) as events:
                    async for event in events:
                        if isinstance(event, TextDelta):
                            streamed = True
                        elif isinstance(event, Usage):
                            finished = True
                        yield event
            except RetryableFailure as failure:
                if streamed:
                    raise broken_stream(self.context, str(failure.error)) from None
                await retries.wait_or_give_up(failure, self.id)
                continue
            if not finished:
                raise broken_stream(self.context, "the stream ended before the model said it had finished")
            return


def broken_stream(context: ProviderContext, reason: str) -> Unavailable:
    """The stream failed after text had arrived: the answer is incomplete and must not pass as whole."""
    return Unavailable(f"the answer from {context.display_name} stopped part way: {context.scrub(reason)}")
