"""A per-client limit on questions: a token bucket per client address, in this process.

Who the client is follows one rule on every door (`secondbrain.service.client_address`): the peer, or what a proxy
of ours recorded in `x-forwarded-for`. Each process keeps its own buckets, so with N chat replicas a client may send
up to N times the rate; that bounds what one client can cost, which is the point, without a shared store. Idle
buckets are dropped so the table stays small.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc

from secondbrain.errors import ResourceExhausted
from secondbrain.service.client_address import FORWARDED_FOR, Network, grpc_peer_address, resolve_client

MAX_CLIENTS = 10_000


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(
        self,
        per_minute: int,
        proxies: Sequence[Network] = (),
        trusted_hops: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_minute = per_minute
        self.proxies = tuple(proxies)
        self.trusted_hops = trusted_hops
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def check_call(self, context: grpc.aio.ServicerContext) -> None:
        """`check` for the client of a gRPC call."""
        self.check(client_of(context, self.proxies, self.trusted_hops))

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


def client_of(context: grpc.aio.ServicerContext, proxies: Sequence[Network] = (), trusted_hops: int = 0) -> str:
    """The client a call came from: its peer, or when the peer is one of `proxies`, whom the proxy saw."""
    forwarded = next((value for key, value in context.invocation_metadata() or () if key == FORWARDED_FOR), None)
    return resolve_client(grpc_peer_address(context.peer()), forwarded, proxies, trusted_hops)
