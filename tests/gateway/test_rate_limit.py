"""The per-client limit on questions: through Envoy and the shim a client over the limit gets a 429 that says when
to try again; other calls are not limited; and the bucket refills with time."""

from __future__ import annotations

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from secondbrain.chat.rate_limit import RateLimiter, client_of
from secondbrain.config import load_settings
from secondbrain.errors import ConfigError, ResourceExhausted
from secondbrain.service.client_address import LOOPBACK, networks, resolve_client
from tests.gateway.conftest import Gateway
from tests.wire import Reply


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


async def ask(gateway: Gateway, forwarded_for: str | bytes, *, through_envoy: bool = True) -> int:
    """One question (through Envoy, or straight to the shim's port) from a client claiming to come from
    `forwarded_for`: the HTTP status."""
    base = gateway.envoy_url if through_envoy else gateway.shim_url
    client = gateway.client(base, **{"x-forwarded-for": forwarded_for})  # type: ignore[arg-type]
    conversation = (await client.post("/api/chat/conversations", json={})).json()["conversation"]["id"]
    answer = await client.post(f"/api/chat/conversations/{conversation}/messages", json={"content": "Tomatoes?"})
    return answer.status_code


async def test_a_forged_forwarded_for_does_not_make_a_new_client(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    await restart_with(gateway, monkeypatch, chat_messages_per_minute="1")
    assert await ask(gateway, "203.0.113.7") == 200
    assert await ask(gateway, "198.51.100.9") == 429, "Envoy trusts no hop in front of it: the client is its peer"


async def test_straight_to_the_shim_a_forged_forwarded_for_from_an_untrusted_peer_is_ignored(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No proxy of ours is trusted here (the test's own loopback is not listed), so the shim's peer is the client,
    # whatever it claims: before, each forged header made a new client.
    await restart_with(gateway, monkeypatch, chat_messages_per_minute="1", trusted_proxies="192.0.2.1")
    assert await ask(gateway, "203.0.113.7", through_envoy=False) == 200
    assert await ask(gateway, "198.51.100.9", through_envoy=False) == 429
    # And a header no address could be is no 500: it is ignored like any other claim.
    assert await ask(gateway, "\u00e9t\u00e9".encode(), through_envoy=False) == 429


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


LOCAL = networks(LOOPBACK)


def test_the_client_is_the_hop_the_outermost_trusted_proxy_saw() -> None:
    chain = Metadata("1.1.1.1, 2.2.2.2, 3.3.3.3")
    assert client_of(chain, LOCAL) == "3.3.3.3"  # type: ignore[arg-type]
    assert client_of(chain, LOCAL, 1) == "2.2.2.2"  # type: ignore[arg-type]
    assert client_of(chain, LOCAL, 2) == "1.1.1.1"  # type: ignore[arg-type]
    # Fewer hops than trusted: not through the proxies, so the address Envoy saw.
    assert client_of(chain, LOCAL, 3) == "3.3.3.3"  # type: ignore[arg-type]
    assert client_of(Metadata(None, "ipv6:[::1]:4444"), LOCAL) == "::1"  # type: ignore[arg-type]


def test_a_forwarded_for_is_believed_only_from_a_trusted_proxy_and_only_as_an_address() -> None:
    # A caller reaching chat (or the shim) directly, not through a proxy of ours: its claim is ignored.
    direct = Metadata("198.51.100.9", "ipv4:203.0.113.50:4444")
    assert client_of(direct, LOCAL) == "203.0.113.50"  # type: ignore[arg-type]
    assert client_of(direct, networks(["203.0.113.0/24"])) == "198.51.100.9"  # type: ignore[arg-type]
    # Not an address (a name, text that is not ASCII): the hop counts as absent, and nothing odd is passed on.
    assert resolve_client("127.0.0.1", "caf\u00e9, 203.0.113.7", LOCAL, 1) == "203.0.113.7"
    assert resolve_client("127.0.0.1", "\u00e9t\u00e9", LOCAL) == "127.0.0.1"
    assert resolve_client("127.0.0.1", "[2001:db8::1]", LOCAL) == "2001:db8::1"


def test_trusted_proxies_are_checked_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECONDBRAIN_TRUSTED_PROXIES", "10.0.0.0/8, ::1, envoy")
    with pytest.raises(ConfigError, match="'envoy' is not an IP address or CIDR block"):
        load_settings()
    monkeypatch.setenv("SECONDBRAIN_TRUSTED_PROXIES", "10.0.0.0/8, ::1")
    assert load_settings().trusted_proxies == ["10.0.0.0/8", "::1"]


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


async def ask_over_mcp(gateway: Gateway, forwarded_for: str) -> tuple[bool, str]:
    """The MCP `ask` tool, called with the official SDK's client through Envoy by a client at `forwarded_for`
    (as a load balancer in front of Envoy would say): whether it was refused, and the text."""
    gateway.chat.llm.script.push(Reply(deltas=["Water them weekly [1]."]))
    async with (
        httpx2.AsyncClient(headers={"x-forwarded-for": forwarded_for}, timeout=30) as http,
        streamable_http_client(f"{gateway.envoy_url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        answer = await session.call_tool("ask", {"question": "How often do I water the tomatoes?"})
    return answer.is_error, answer.content[0].text


async def test_mcp_ask_is_limited_per_mcp_client_not_per_shim(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by a probe: `ask` reached chat without the client's address, so every MCP client shared the shim's
    # bucket and one could keep `ask` refused for all.
    await restart_with(gateway, monkeypatch, chat_messages_per_minute="1", trusted_proxy_hops="1")
    refused, text = await ask_over_mcp(gateway, "203.0.113.7")
    assert not refused and text.startswith("Water them weekly [1].")
    refused, text = await ask_over_mcp(gateway, "203.0.113.7")
    assert refused and "too many questions from 203.0.113.7" in text
    assert (await ask_over_mcp(gateway, "198.51.100.9"))[0] is False, "another client has its own bucket"
