"""Retrying (`secondbrain.providers.retry`): what may pass is tried again with backoff, within a number of tries and
a deadline, and what gives up says so; anything else is not retried."""

from __future__ import annotations

import pytest

from secondbrain.errors import InvalidInput, Unavailable
from secondbrain.providers import RetryableFailure, RetryPolicy, call_with_retries

FAST = RetryPolicy(attempts=3, deadline_seconds=5, base_delay_seconds=0.01, max_delay_seconds=0.05)


def test_a_providers_retry_after_is_honoured_within_the_cap() -> None:
    policy = RetryPolicy(max_delay_seconds=8.0)
    assert policy.delay(0, retry_after=2.5) == 2.5
    assert policy.delay(0, retry_after=60.0) == 8.0
    assert policy.delay(0, retry_after=-1.0) == 0.0


def test_backoff_doubles_with_jitter_up_to_the_cap() -> None:
    policy = RetryPolicy(base_delay_seconds=0.5, max_delay_seconds=8.0)
    for attempt, full in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        delays = [policy.delay(attempt, None) for _ in range(50)]
        assert all(full * 0.5 <= delay <= full for delay in delays), attempt
        assert len(set(delays)) > 1, "jittered, so many clients do not retry in step"


async def test_what_may_pass_is_retried_until_it_does() -> None:
    calls: list[int] = []

    async def call() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise RetryableFailure(Unavailable("overloaded"), retry_after=0)
        return "answer"

    assert await call_with_retries(call, FAST, "test") == "answer"
    assert len(calls) == 3


async def test_giving_up_raises_the_failures_own_error_saying_how_many_tries() -> None:
    calls: list[int] = []

    async def call() -> str:
        calls.append(1)
        raise RetryableFailure(Unavailable("overloaded"), retry_after=0)

    with pytest.raises(Unavailable, match=r"^overloaded \(gave up after 3 attempts\)$"):
        await call_with_retries(call, FAST, "test")
    assert len(calls) == FAST.attempts


async def test_a_pause_past_the_deadline_gives_up_at_once() -> None:
    calls: list[int] = []

    async def call() -> str:
        calls.append(1)
        raise RetryableFailure(Unavailable("rate-limited"), retry_after=5)

    policy = RetryPolicy(attempts=10, deadline_seconds=1, max_delay_seconds=8)
    with pytest.raises(Unavailable, match=r"gave up after 1 attempt\)"):
        await call_with_retries(call, policy, "test")
    assert len(calls) == 1


async def test_what_will_not_pass_is_not_retried() -> None:
    calls: list[int] = []

    async def call() -> str:
        calls.append(1)
        raise InvalidInput("no such model")

    with pytest.raises(InvalidInput, match="no such model"):
        await call_with_retries(call, FAST, "test")
    assert len(calls) == 1
