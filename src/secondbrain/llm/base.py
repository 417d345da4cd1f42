"""The one interface to a chat model, with the retry policy every vendor shares."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from secondbrain.llm.errors import ProviderContext, RetryableFailure, broken_stream
from secondbrain.llm.types import ChatRequest, StreamEvent, TextDelta, Usage

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Retry what may pass (rate limits, overload, 5xx, network): up to `attempts` tries within `deadline_seconds`."""

    attempts: int = 4
    deadline_seconds: float = 30.0
    base_delay_seconds: float = 0.5
    max_delay_seconds: float = 8.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay_seconds)
        backoff = min(self.base_delay_seconds * 2**attempt, self.max_delay_seconds)
        return backoff * random.uniform(0.5, 1.0)  # jitter, so many clients do not retry in step

    def start(self) -> RetryState:
        return RetryState(self, time.monotonic() + self.deadline_seconds)


@dataclass
class RetryState:
    """One operation's progress through its RetryPolicy."""

    policy: RetryPolicy
    deadline: float
    attempts: int = 0

    async def wait_or_give_up(self, failure: RetryableFailure, what: str) -> None:
        """Sleep before the next try, or raise the failure's error when tries or time have run out."""
        self.attempts += 1
        pause = self.policy.delay(self.attempts - 1, failure.retry_after)
        if self.attempts >= self.policy.attempts or time.monotonic() + pause > self.deadline:
            tries = f"{self.attempts} attempt{'s' if self.attempts > 1 else ''}"
            raise type(failure.error)(f"{failure.error} (gave up after {tries})") from None
        log.info(
            "call failed; retrying", extra={"call": what, "attempt": self.attempts, "pause_seconds": round(pause, 2)}
        )
        await asyncio.sleep(pause)


async def call_with_retries(call: Callable[[], Awaitable[T]], policy: RetryPolicy, what: str) -> T:
    """`await call()`, retried under `policy` while it raises RetryableFailure."""
    state = policy.start()
    while True:
        try:
            return await call()
        except RetryableFailure as failure:
            await state.wait_or_give_up(failure, what)


class ChatProvider(ABC):
    """A chat model behind one interface. `stream()` yields `TextDelta`s, then exactly one `Usage`, or raises.

    Subclasses implement `_stream_once`, one attempt that translates its SDK's failures with
    `secondbrain.llm.errors`; retrying lives here. Once text has been yielded nothing is retried: a failure after
    that raises, so a partial answer is never mistaken for a whole one.
    """

    def __init__(self, context: ProviderContext, retry: RetryPolicy | None = None) -> None:
        self.context = context
        self.retry = retry or RetryPolicy()

    @property
    def id(self) -> str:
        return self.context.provider_id

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
