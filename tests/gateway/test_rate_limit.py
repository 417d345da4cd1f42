"""The per-client limit on questions: through Envoy and the shim a client over the limit gets a 429 that says when
to try again; other calls are not limited; and the bucket refills with time."""

from __future__ import annotations

import pytest

from secondbrain.chat.rate_limit import RateLimiter, client_of
from secondbrain.errors import ResourceExhausted
from tests.gateway.conftest import Gateway


async def restart_with(gateway: Gateway, monkeypatch: pytest.MonkeyPatch, **settings: str) -> None:
    """Chat, the shim and Envoy started again with these SECONDBRAIN_ settings."""
    for name, value in settings.items():
        monkeypatch.setenv(f"SECONDBRAIN_{name.upper()}", value)
    await gateway.chat.start_chat()
    await gateway.start()


async def test_questions_over_the_limit_get_429_saying_when_to_retry(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    await restart_with(gateway, monkeypatch, chat_messages_per_minute="2")
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


async def ask(gateway: Gateway, forwarded_for: str) -> int:
    """One question through Envoy from a client claiming to come from `forwarded_for`: the HTTP status."""
    client = gateway.client(gateway.envoy_url, **{"x-forwarded-for": forwarded_for})
    conversation = (await client.post("/api/chat/conversations", json={})).json()["conversation"]["id"]
    answer = await client.post(f"/api/chat/conversations/{conversation}/messages", json={"content": "Tomatoes?"})
    return answer.status_code


async def test_a_forged_forwarded_for_does_not_make_a_new_client(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    await restart_with(gateway, monkeypatch, chat_messages_per_minute="1")
    assert await ask(gateway, "203.0.113.7") == 200
    assert await ask(gateway, "198.51.100.9") == 429, "Envoy trusts no hop in front of it: the client is its peer"


async def test_behind_a_trusted_proxy_clients_are_told_apart_by_what_it_saw(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    await restart_with(gateway, monkeypatch, chat_messages_per_minute="1", trusted_proxy_hops="1")
    # As a load balancer would send them: the client it saw, after whatever the client claimed.
    assert await ask(gateway, "203.0.113.7") == 200
    assert await ask(gateway, "198.51.100.9") == 200
    assert await ask(gateway, "10.9.9.9, 203.0.113.7") == 429, "the same client, whatever it claims before"


class Metadata:
    """What client_of reads of a gRPC context."""

    def __init__(self, forwarded_for: str | None, peer: str = "ipv4:127.0.0.1:5555") -> None:
        self.forwarded_for, self._peer = forwarded_for, peer

    def invocation_metadata(self) -> list[tuple[str, str]]:
        return [] if self.forwarded_for is None else [("x-forwarded-for", self.forwarded_for)]

    def peer(self) -> str:
        return self._peer


def test_the_client_is_the_hop_the_outermost_trusted_proxy_saw() -> None:
    chain = Metadata("1.1.1.1, 2.2.2.2, 3.3.3.3")
    assert client_of(chain) == "3.3.3.3"  # type: ignore[arg-type]
    assert client_of(chain, 1) == "2.2.2.2"  # type: ignore[arg-type]
    assert client_of(chain, 2) == "1.1.1.1"  # type: ignore[arg-type]
    # Fewer hops than trusted: not through the proxies, so the address Envoy saw.
    assert client_of(chain, 3) == "3.3.3.3"  # type: ignore[arg-type]
    assert client_of(Metadata(None, "ipv6:[::1]:4444")) == "::1"  # type: ignore[arg-type]


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
