"""Wrong tokens slowed, one rule at every door that checks the token (each gRPC port's `TokenInterceptor`, the
shim's `TokenGuard` in front of `/api/`, `/v1/` and `/mcp`): after `TOKEN_GUESSES_ALLOWED` wrong tokens from one
client within `TOKEN_GUESS_WINDOW_SECONDS`, every request from that client is refused for
`TOKEN_GUESS_REFUSAL_SECONDS` (gRPC RESOURCE_EXHAUSTED, HTTP 429 with Retry-After), whatever token it carries: a
guess made meanwhile is never tried, and the right one would be refused like the rest, so the answer says nothing
(issue 47, friction 1: 5,000 guesses took 3.1 s). A request without any token is not a guess and is not counted.

The client is `client_address`'s, the rule every per-client limit follows: the peer, or the `x-forwarded-for` of a
proxy of ours (Envoy's loopback hop by default, SECONDBRAIN_TRUSTED_PROXIES). An IPv6 client is counted by its /64.
Each process keeps its own table, bounded (`TOKEN_GUESS_CLIENTS`): with the shim and three gRPC services behind
Envoy, one client has at most four allowances a window. Clients sharing an address (behind one NAT, or every client
behind a proxy not named in SECONDBRAIN_TRUSTED_PROXY_HOPS) share one allowance, so one of them guessing refuses all.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from secondbrain.service.listener_bounds import (
    TOKEN_GUESS_CLIENTS,
    TOKEN_GUESS_REFUSAL_SECONDS,
    TOKEN_GUESS_WINDOW_SECONDS,
    TOKEN_GUESSES_ALLOWED,
)

log = logging.getLogger(__name__)


@dataclass
class _Client:
    # Wrong tokens since `since`, the first of the current window.
    wrong: int
    since: float
    refused_until: float = 0.0


def client_key(client: str) -> str:
    """Whom `client`'s wrong tokens count against: an IPv4 address itself (an IPv4-mapped IPv6 one as IPv4), an IPv6
    address its /64, anything else (an unknown peer) as it is."""
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return client
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class TokenGuesses:
    """The wrong tokens of each client lately, and who is refused until when. Not thread-safe: each process uses it
    from its one event loop."""

    def __init__(
        self,
        allowed: int = TOKEN_GUESSES_ALLOWED,
        window: float = TOKEN_GUESS_WINDOW_SECONDS,
        refusal: float = TOKEN_GUESS_REFUSAL_SECONDS,
        capacity: int = TOKEN_GUESS_CLIENTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.allowed = allowed
        self.window = window
        self.refusal = refusal
        self.capacity = capacity
        self._clock = clock
        # Least recently wrong first, so the one to forget is at the front.
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self._last_refusal_ends = 0.0

    def refusing_anyone(self) -> bool:
        """Whether any client may be refused now: when not, a right token needs no look-up of its caller."""
        return self._clock() < self._last_refusal_ends

    def refused_for(self, client: str) -> float:
        """Seconds `client` stays refused (0: it is not)."""
        known = self._clients.get(client_key(client))
        return max(0.0, known.refused_until - self._clock()) if known is not None else 0.0

    def wrong(self, client: str) -> None:
        """Count a wrong token from `client` (the one that reaches the limit is answered as wrong; the next are
        refused)."""
        now = self._clock()
        key = client_key(client)
        known = self._clients.get(key)
        if known is None or now - known.since >= self.window:
            known = _Client(wrong=0, since=now, refused_until=known.refused_until if known else 0.0)
            self._clients[key] = known
        self._clients.move_to_end(key)
        known.wrong += 1
        if known.wrong >= self.allowed and known.refused_until <= now:
            known.refused_until = now + self.refusal
            self._last_refusal_ends = max(self._last_refusal_ends, known.refused_until)
            # One line per refusal, never one per guess: a flood of them is a count.
            log.warning(
                "wrong tokens: refusing a client",
                extra={"client": key, "wrong_tokens": known.wrong, "within_seconds": round(now - known.since, 1),
                       "refused_seconds": self.refusal},
            )  # fmt: skip
        while len(self._clients) > self.capacity:
            self._clients.popitem(last=False)

    def refusal_message(self, client: str, seconds: float) -> str:
        """Why a request from `client` is refused for `seconds` more, in words."""
        return (
            f"too many wrong API tokens from {client}: its requests are refused for {math.ceil(seconds)} s more, "
            f"whatever token they carry (after {self.allowed} wrong within {self.window:.0f} s); send the value of "
            "SECONDBRAIN_API_TOKEN once that is over"
        )
