"""Who a request came from, for chat's per-client limit: one rule for every door (gRPC, grpc-web, REST, /v1, /mcp).

A client is the peer that connected, unless that peer is a proxy of ours (Envoy, the shim, a load balancer: an
address in SECONDBRAIN_TRUSTED_PROXIES, loopback by default), whose `x-forwarded-for` then says whom it saw: its
last hop, or with SECONDBRAIN_TRUSTED_PROXY_HOPS proxies in front of Envoy, the hop that many places before. A
header from anyone else is a claim, not evidence, so it is ignored (found by a probe: on the shim's own port a forged
`X-Forwarded-For` made a new client per request). Only a well-formed address is ever believed or passed on: a hop
that is not one (a name, non-ASCII text) counts as absent.

The shim resolves the client of each HTTP request once (`ClientAddress` middleware sets `FORWARDED_CLIENT`), and every
gRPC call it makes while serving that request carries it (`open_channel`'s interceptor), so a tool call over MCP is
limited by the MCP client's address, not the shim's.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from typing import Any

FORWARDED_FOR = "x-forwarded-for"
LOOPBACK = ("127.0.0.0/8", "::1/128")
# The client of the request being served, when a proxy of ours resolved it; passed on as `x-forwarded-for`.
FORWARDED_CLIENT: ContextVar[str | None] = ContextVar("secondbrain_forwarded_client", default=None)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(specs: Iterable[str]) -> tuple[Network, ...]:
    """Networks from addresses or CIDR blocks ("10.0.0.0/8", "::1"); raises ValueError naming a bad one."""
    parsed = []
    for spec in specs:
        try:
            parsed.append(ipaddress.ip_network(spec.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{spec!r} is not an IP address or CIDR block (such as 10.0.0.0/8 or ::1)") from None
    return tuple(parsed)


def address(text: str) -> str | None:
    """`text` as a canonical IP address ("::1", "203.0.113.7"), or None when it is not one."""
    try:
        return str(ipaddress.ip_address(text.strip().strip("[]")))
    except ValueError:
        return None


def trusted(peer: str, proxies: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def resolve_client(peer: str, forwarded_for: str | None, proxies: Sequence[Network], hops: int = 0) -> str:
    """The client of a request from `peer` carrying `forwarded_for`: see the module's rule."""
    if not forwarded_for or not trusted(peer, proxies):
        return peer
    chain = [address(hop) for hop in forwarded_for.split(",")]
    # Fewer hops than trusted: the request did not come through the proxies in front, so the last hop (the address
    # our own proxy saw) is the one to believe, as Envoy itself does.
    chosen = chain[-1 - hops] if len(chain) > hops else chain[-1]
    return chosen or chain[-1] or peer


def grpc_peer_address(peer: str | None) -> str:
    """The address of a gRPC peer string ("ipv4:127.0.0.1:5555", "ipv6:[::1]:5555"), without the port."""
    if not peer:
        return "unknown"
    spelled = peer.split(":", 1)[-1]
    return spelled.rsplit(":", 1)[0].strip("[]") if ":" in spelled else spelled


def call_client(context: Any, proxies: Sequence[Network] = (), trusted_hops: int = 0) -> str:
    """The client of a gRPC call (`context`, a `grpc.aio.ServicerContext`): its peer, or when the peer is one of
    `proxies`, whom the proxy saw."""
    forwarded = next((value for key, value in context.invocation_metadata() or () if key == FORWARDED_FOR), None)
    return resolve_client(grpc_peer_address(context.peer()), forwarded, proxies, trusted_hops)
