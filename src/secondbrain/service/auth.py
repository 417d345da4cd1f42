"""The API token: one shared secret (`SECONDBRAIN_API_TOKEN`) that every caller presents as `Bearer <token>`.

When a token is configured, every gRPC service refuses calls without it (the health check excepted, so Kubernetes
probes and `secondbrain health` still work), and so does the REST shim. Envoy forwards the browser's
`authorization` header as gRPC metadata, so one check at each backend covers every way in. Without a token,
everything binds to loopback only (`Settings` refuses anything else), so the check would guard nothing.

Internal callers (the CLI, chat calling retrieve, the shim) attach the token through `open_channel`.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2

from secondbrain.jsonlog import request_id
from secondbrain.service.client_address import FORWARDED_CLIENT, FORWARDED_FOR, Network, call_client
from secondbrain.service.handlers import Behaviour, HandlerInterceptor, with_behaviour, without_reading
from secondbrain.service.limits import MAX_RESPONSE_BYTES
from secondbrain.service.token_guesses import TokenGuesses
from secondbrain.service.tracing import inject

HEADER = "authorization"
REQUEST_ID_HEADER = "x-request-id"
SCHEME = "Bearer"
# Health checks stay open: probes cannot carry a secret, and a status reveals nothing (without the token, the
# request is not read and the overall status is the answer: see TokenInterceptor).
OPEN_METHOD_PREFIXES = ("/grpc.health.v1.Health/",)

REFUSED = (
    "this server needs the API token: send the header 'Authorization: Bearer <token>' with the value of "
    "SECONDBRAIN_API_TOKEN"
)


# `<scheme> <token>`, the two apart by any run of spaces or tabs.
_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z]+)[ \t]+(?P<token>\S+)")


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps a server reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    # A peer of a dual-stack socket (`::ffff:127.0.0.1`) is the IPv4 address it maps.
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return (mapped or address).is_loopback


# The names by which a request is addressed to this machine and no other, as Envoy routes them too. `.localhost` is
# reserved for loopback (RFC 6761): no one can register a name under it to rebind.
LOOPBACK_NAMES = ("localhost", "*.localhost", "127.0.0.1", "[::1]")
# A Host header: a name or a bracketed IPv6 address, and a port.
_HOST = re.compile(r"(?P<name>\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::\d{1,5})?")


def is_loopback_host(host: str) -> bool:
    """Whether a Host header (`localhost:8080`, `[::1]`) addresses this machine by one of LOOPBACK_NAMES."""
    matched = _HOST.fullmatch(host.strip().lower())
    if matched is None:
        return False
    name = matched["name"]
    return name in LOOPBACK_NAMES or (name.endswith(".localhost") and not name.startswith("."))


def is_loopback_origin(origin: str) -> bool:
    """Whether an Origin header (`http://localhost:5173`) is a page served under a loopback name; "null" is not."""
    scheme, separator, host = origin.strip().partition("://")
    return bool(separator) and scheme.lower() in ("http", "https") and is_loopback_host(host)


def bearer(token: str) -> str:
    return f"{SCHEME} {token}"


def token_matches(presented: str | None, token: str) -> bool:
    """Whether the `authorization` value `presented` carries `token`, compared in constant time (no timing hint
    of how much of a guess was right). The scheme is matched in any case and may be followed by any run of
    spaces or tabs (RFC 6750 and RFC 9110: auth schemes are case-insensitive; the header is often typed by hand)."""
    if presented is None:
        return False
    parts = _CREDENTIALS.fullmatch(presented.strip())
    if parts is None or parts["scheme"].lower() != SCHEME.lower():
        return False
    return hmac.compare_digest(parts["token"].encode(), token.encode())


class TokenInterceptor(HandlerInterceptor):
    """Refuses every call without the token with UNAUTHENTICATED, before any handler runs and before its request
    is read: a caller without the token can make the server hold nothing (found by a probe: 20 unauthenticated
    15 MB calls took ingest from 0.9 to 1.7 GB when the message was parsed first).

    A health check without the token is answered, but its request is not read either: gRPC's transport limit is
    the server's largest method's (16 MiB on ingest, for UpsertNote), so reading it let 20 unauthenticated 15 MB
    checks take ingest from 95 to 445 MB (a second probe). It is answered with the server's overall status, which
    is every service's (`RunningServer.set_status` sets them together): what a probe naming its service would get.

    Wrong tokens count against their caller (`token_guesses`, the client by `client_address`'s rule with `proxies`
    and `trusted_hops`); a caller over the limit is refused with RESOURCE_EXHAUSTED whatever it sends. gRPC tells an
    interceptor a call's metadata but not its peer, so the token is compared first (in constant time), whether to
    read the request depends on it, and the caller is looked up once the call runs: a refused caller's answer is the
    same either way, and a right token needs no look-up while nobody is refused."""

    def __init__(
        self,
        token: str,
        health_servicer: health.aio.HealthServicer,
        guesses: TokenGuesses | None = None,
        proxies: Sequence[Network] = (),
        trusted_hops: int = 0,
    ) -> None:
        self._token = token
        self._health = health_servicer
        self._guesses = guesses or TokenGuesses()
        self._proxies = tuple(proxies)
        self._trusted_hops = trusted_hops

    def wrap(self, handler: grpc.RpcMethodHandler, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        metadata = dict(details.invocation_metadata or ())
        presented = metadata.get(HEADER)
        if token_matches(presented, self._token):
            if not self._guesses.refusing_anyone() or details.method.startswith(OPEN_METHOD_PREFIXES):
                return handler
            return with_behaviour(handler, unary=self._unless_refused_unary, stream=self._unless_refused_stream)
        if details.method.startswith(OPEN_METHOD_PREFIXES):
            # Answered whatever the token: not a guess (its answer is no different with the right one).
            return without_reading(handler, unary=self._overall_check, stream=self._overall_watch)
        # Every kind of call is refused, reflection's bidi stream included; only a token presented is a guess.
        guess = presented is not None

        async def refuse_unary(requests: Any, context: grpc.aio.ServicerContext) -> Any:
            await self._refuse(context, guess)

        async def refuse_stream(requests: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            await self._refuse(context, guess)
            yield  # pragma: no cover - _refuse raises; the yield makes this an async generator like the handler

        return without_reading(handler, unary=refuse_unary, stream=refuse_stream)

    async def _refuse(self, context: grpc.aio.ServicerContext, guess: bool) -> None:
        client = await self._abort_if_refused(context)
        if guess:
            self._guesses.wrong(client)
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, REFUSED)

    async def _abort_if_refused(self, context: grpc.aio.ServicerContext) -> str:
        """RESOURCE_EXHAUSTED when the call's client is refused; else the client."""
        client = call_client(context, self._proxies, self._trusted_hops)
        if seconds := self._guesses.refused_for(client):
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, self._guesses.refusal_message(client, seconds))
        return client

    def _unless_refused_unary(self, behaviour: Behaviour) -> Behaviour:
        async def run(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await self._abort_if_refused(context)
            return await behaviour(request, context)

        return run

    def _unless_refused_stream(self, behaviour: Behaviour) -> Behaviour:
        async def run(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            await self._abort_if_refused(context)
            async for response in behaviour(request, context):
                yield response

        return run

    async def _overall_check(self, requests: Any, context: grpc.aio.ServicerContext) -> Any:
        return await self._health.Check(health_pb2.HealthCheckRequest(), context)

    async def _overall_watch(self, requests: Any, context: grpc.aio.ServicerContext) -> None:
        await self._health.Watch(health_pb2.HealthCheckRequest(), context)


def _with_metadata(details: grpc.aio.ClientCallDetails, token: str | None) -> grpc.aio.ClientCallDetails:
    """The call with the token, the id of the request being served, the client it is served for (as a proxy of
    ours resolved it) and its trace context, each when there is one."""
    extra = [(HEADER, bearer(token))] if token else []
    if (current := request_id.get()) is not None:
        extra.append((REQUEST_ID_HEADER, current))
    if (client := FORWARDED_CLIENT.get()) is not None:
        extra.append((FORWARDED_FOR, client))
    trace_context: dict[str, str] = {}
    inject(trace_context)
    extra += trace_context.items()
    if not extra:
        return details
    metadata = grpc.aio.Metadata(*(details.metadata or ()), *extra)
    return grpc.aio.ClientCallDetails(
        details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
    )


# Two classes, not one with both methods: a channel files each interceptor under the first kind it matches.
class _AttachUnary(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, token: str | None) -> None:
        self._token = token

    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(_with_metadata(client_call_details, self._token), request)


class _AttachStream(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, token: str | None) -> None:
        self._token = token

    async def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(_with_metadata(client_call_details, self._token), request)


# Calls are spread over every address the name resolves to (each pod behind a headless Kubernetes Service), not
# pinned to the first: one channel is shared by every turn, so pick_first would send them all to one pod.
BALANCED = [("grpc.lb_policy_name", "round_robin")]
# gRPC's default reconnect backoff grows to two minutes, and a call made while the channel waits fails at once: a
# restarted retrieve service would stay "not answering" to chat long after it is back. Between our own services,
# retrying a connection every second at most costs nothing. Found by tests/reliability (kill retrieve mid-turn).
RECONNECT = [
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


def open_channel(target: str, token: str | None, options: list[tuple[str, Any]] | None = None) -> grpc.aio.Channel:
    """A channel to one of our services that presents `token` (when there is one) and the id of the request being
    served on every call, balanced over every address of `target`."""
    interceptors: list[grpc.aio.ClientInterceptor] = [_AttachUnary(token), _AttachStream(token)]
    # gRPC's clients take 4 MiB by default; our servers send up to MAX_RESPONSE_BYTES (a 10 MiB note or attachment).
    receive = [("grpc.max_receive_message_length", MAX_RESPONSE_BYTES)]
    return grpc.aio.insecure_channel(
        target, options=[*BALANCED, *RECONNECT, *receive, *(options or [])], interceptors=interceptors
    )
