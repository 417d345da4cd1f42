"""A per-client limit on questions: a token bucket per client address, in this process.

A client is the address the request came from: the last hop Envoy or the shim recorded in `x-forwarded-for` (the
address they saw, which a client cannot forge past them), else the gRPC peer. Behind proxies of one's own (a load
balancer, an Ingress), `SECONDBRAIN_TRUSTED_PROXY_HOPS` of them, it is the hop that many places before that one:
the address the outermost trusted proxy saw. Each process keeps its own buckets,
so with N chat replicas a client may send up to N times the rate; that bounds what one client can cost, which is
the point, without a shared store. Idle buckets are dropped so the table stays small.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from secondbrain.errors import ResourceExhausted

MAX_CLIENTS = 10_000


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(self, per_minute: int, trusted_hops: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.trusted_hops = trusted_hops
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def check(self, client: str) -> None:
        """Take one question from `client`'s bucket, or raise ResourceExhausted saying when to try again."""
        if self.per_minute <= 0:
            return
        now = self._clock()
        rate = self.per_minute / 60.0
        bucket = self._buckets.get(client)
        if bucket is None:
            if len(self._buckets) >= MAX_CLIENTS:
                self._prune(now)
            bucket = self._buckets[client] = _Bucket(float(self.per_minute), now)
        bucket.tokens = min(float(self.per_minute), bucket.tokens + (now - bucket.updated) * rate)
        bucket.updated = now
        if bucket.tokens < 1:
            wait = (1 - bucket.tokens) / rate
            raise ResourceExhausted(
                f"too many questions from {client}: at most {self.per_minute} a minute; try again in {wait:.0f} s "
                "(SECONDBRAIN_CHAT_MESSAGES_PER_MINUTE sets the limit)"
            )
        bucket.tokens -= 1

    def _prune(self, now: float) -> None:
        """Forget clients idle for a minute (their buckets are full again, so forgetting costs them nothing); if
        that is not enough, the half idle longest."""
        for client in [c for c, bucket in self._buckets.items() if now - bucket.updated >= 60]:
            del self._buckets[client]
        if len(self._buckets) >= MAX_CLIENTS:
            for client in sorted(self._buckets, key=lambda c: self._buckets[c].updated)[: MAX_CLIENTS // 2]:
                del self._buckets[client]


def client_of(context: grpc.aio.ServicerContext, trusted_hops: int = 0) -> str:
    """The address a request came from: the `x-forwarded-for` hop `trusted_hops` before the last when a proxy set
    one, else the peer. With fewer hops than that, the request did not come through the trusted proxies, and the
    last hop (the address Envoy saw) is the one to believe, as Envoy itself does."""
    for key, value in context.invocation_metadata() or ():
        if key == "x-forwarded-for" and value.strip():
            hops = [hop.strip() for hop in value.split(",")]
            return hops[-1 - trusted_hops] if len(hops) > trusted_hops else hops[-1]
    peer = context.peer() or "unknown"
    # "ipv4:127.0.0.1:5555" / "ipv6:[::1]:5555": the address without the port.
    address = peer.split(":", 1)[-1]
    return address.rsplit(":", 1)[0].strip("[]") if ":" in address else address
