"""Retrying what may pass (rate limits, overload, 5xx, network), once for every provider and every kind of call.

Vendor SDKs' own retries are off: a 429 retried by the SDK and again here would back off twice over.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from secondbrain.providers.errors import RetryableFailure

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
