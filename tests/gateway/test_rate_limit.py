"""The per-client limit on questions: through Envoy and the shim a client over the limit gets a 429 that says when
to try again; other calls are not limited; and the bucket refills with time."""

from __future__ import annotations

import pytest

from secondbrain.chat.rate_limit import RateLimiter
from secondbrain.errors import ResourceExhausted
from tests.gateway.conftest import Gateway


async def test_questions_over_the_limit_get_429_saying_when_to_retry(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECONDBRAIN_CHAT_MESSAGES_PER_MINUTE", "2")
    await gateway.chat.start_chat()
    await gateway.start()
    client = gateway.client(gateway.envoy_url)
    conversation = (await client.post("/api/chat/conversations", json={})).json()["conversation"]["id"]
    path = f"/api/chat/conversations/{conversation}/messages"
    for _ in range(2):
        answered = await client.post(path, json={"content": "How often do I water the tomatoes?"})
        assert answered.status_code == 200 and "event: done" in answered.text
    refused = await client.post(path, json={"content": "And the basil?"})
    assert refused.status_code == 429, refused.text
    error = refused.json()["error"]
    assert error["code"] == "RESOURCE_EXHAUSTED" and "at most 2 a minute" in error["message"]
    assert "try again in" in error["message"]
    assert (await client.get("/api/chat/options")).status_code == 200, "only questions are limited"
    stored = (await client.get(f"/api/chat/conversations/{conversation}")).json()["conversation"]["messages"]
    assert len(stored) == 4, "a refused question is not stored"


def test_the_bucket_refills_and_clients_are_counted_apart() -> None:
    now = [0.0]
    limiter = RateLimiter(3, clock=lambda: now[0])
    for _ in range(3):
        limiter.check("10.0.0.1")
    with pytest.raises(ResourceExhausted, match="try again in 20 s"):
        limiter.check("10.0.0.1")
    limiter.check("10.0.0.2")  # another client has its own bucket
    now[0] += 20  # a third of a minute: one question's worth
    limiter.check("10.0.0.1")
    with pytest.raises(ResourceExhausted):
        limiter.check("10.0.0.1")
    RateLimiter(0).check("anyone")  # 0 turns the limit off
