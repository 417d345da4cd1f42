"""What every listener accepts before it knows who is calling: one place for the bounds on connections, on the time
a connection may take to say what it wants or sit idle, on streams, and on compression (issue 47: a third hostile
probe held 20,000 silent connections on the shim's and the gRPC ports, and inflated 840 KB gzip requests to 15 MiB
in ingest's memory).

Read by `service/server.py` (each gRPC port), `gateway/server.py` (the shim) and `gateway/envoy_config.py` (Envoy's
cap on connections; its template, `gateway/envoy.yaml.template`, holds its timeouts: request headers within 10 s, a
client connection idle 60 s is closed).
"""

from __future__ import annotations

# --- gRPC ports (ingest, retrieve, chat) ---

# A connection that has not finished its handshake (for plain TCP, sent the HTTP/2 preface and settings) within this
# is closed. gRPC's default is 120 s; a probe's 20,000 connections that sent nothing were dropped after about 20 s.
GRPC_HANDSHAKE_TIMEOUT_MS = 5_000
# A connection with no call in flight for this long is sent GOAWAY and closed. Callers (Envoy, the shim, chat's
# channel to retrieve) simply reconnect for their next call; gRPC's default is never.
GRPC_IDLE_CONNECTION_MS = 30_000
# Calls at once on one connection. Envoy and the shim multiplex every caller's streams onto a few connections (the
# load benchmark runs 250 at once), and open another when one is full; gRPC's default is unbounded.
GRPC_MAX_CONCURRENT_STREAMS = 1_000
# Requests may only be sent uncompressed (bit 0 of the set: identity). gRPC applies a method's size limit after it
# has decompressed a message, so a 840 KB gzip request of 15 MiB of one letter was inflated whole before it was
# refused; with gzip and deflate disabled, a compressed request is UNIMPLEMENTED ("Compression algorithm 'gzip' is
# disabled") from its headers, before its message is read. Nothing of ours compresses a request.
GRPC_ACCEPTED_COMPRESSION_BITSET = 1


def grpc_server_options() -> list[tuple[str, int]]:
    """The channel arguments every gRPC server of ours gets for its connections (the size limits are limits.py's)."""
    return [
        ("grpc.server_handshake_timeout_ms", GRPC_HANDSHAKE_TIMEOUT_MS),
        ("grpc.max_connection_idle_ms", GRPC_IDLE_CONNECTION_MS),
        ("grpc.max_concurrent_streams", GRPC_MAX_CONCURRENT_STREAMS),
        ("grpc.compression_enabled_algorithms_bitset", GRPC_ACCEPTED_COMPRESSION_BITSET),
    ]


# --- Envoy (the one listener meant for clients) ---

# Client connections Envoy holds at once (the overload manager's `global_downstream_max_connections`, on all its
# listeners: one more is closed as soon as it is accepted, and counted in its stats). Envoy has no bound per client:
# its connection limit filter (`envoy.filters.network.connection_limit`) and connection rate limit are per listener
# too, and what keys on the client's address (the local rate limit's descriptors) counts requests, not connections;
# a flood from one address is bounded by this, by the 60 s idle timeout and by the 10 s for request headers
# (docs/reliability.md says how to bound each client in front of Envoy).
ENVOY_MAX_CONNECTIONS = 10_000
# What else Envoy keeps open: its connections to the services (each cluster's circuit breaker allows 1,024 by
# default; only the shim's, HTTP/1.1 with one request per connection, grows with the clients) and its own files.
ENVOY_UPSTREAM_CONNECTIONS = 1_024
ENVOY_SPARE_FILES = 128


def envoy_max_connections(file_limit: int) -> int:
    """The cap on Envoy's client connections for an Envoy that may open `file_limit` descriptors (its RLIMIT_NOFILE):
    ENVOY_MAX_CONNECTIONS where the limit has room for it beside the upstream connections and Envoy's own files (at a
    limit of 20,000, say), else what it has room for, and never less than half the limit (at 1,024: 512), so a flood
    meets this cap before Envoy runs out of descriptors."""
    room = file_limit - ENVOY_UPSTREAM_CONNECTIONS - ENVOY_SPARE_FILES
    return min(ENVOY_MAX_CONNECTIONS, max(room, file_limit // 2))


# --- The REST shim (uvicorn) ---

# A request line and headers must all have arrived within this of the connection opening, or of the previous
# response: a connection that sends `GET / HTTP/1.1` and waits is closed (uvicorn has no such timeout of its own:
# a probe held 3,000 such connections open for over a minute, then 20,000 at the file limit).
SHIM_HEAD_TIMEOUT_SECONDS = 10.0
# A connection idle between requests is closed after this (uvicorn's timeout_keep_alive).
SHIM_KEEP_ALIVE_SECONDS = 5
# Connections open at once; one more is closed as soon as it is accepted. Under the process's file limit (20,000
# here, often 1,024), so the shim's own channels, files and the database never run out of descriptors.
SHIM_MAX_CONNECTIONS = 2_000
# Connections waiting to be accepted (the listen backlog), which is also how many asyncio accepts in one go. Under
# SHIM_MAX_CONNECTIONS, so the few bursts accepted before a new connection's first read cannot fill every slot with
# connections not yet read (one of them is closed to make room only once read: BoundedH11Protocol). Under a flood
# of 5,000 reconnecting idle connections, of 50 requests each on a new connection: uvicorn's 2,048, 5 closed
# unanswered, slowest 2.9 s; 1,024, none closed, slowest 1.5 s; 512, none closed, slowest 2.5 s (more SYNs dropped).
SHIM_ACCEPT_BACKLOG = 1_024
# An accept that fails for want of descriptors is logged at most once in this many seconds, with the count since.
ACCEPT_ERRORS_LOG_EVERY_SECONDS = 10.0

# --- Each gRPC service's /metrics (prometheus_client's WSGI server, service/metrics_http.py) ---

# A scrape is one short request: a client has this long for each read and write, then its connection is closed.
METRICS_CLIENT_TIMEOUT_SECONDS = 5.0
# Clients served at once, each in a thread; one more is closed as soon as it is accepted (Prometheus scrapes one at
# a time; a probe's 300 slow clients made 316 threads in ingest).
METRICS_MAX_CLIENTS = 16

# --- Wrong tokens, at every door that checks the token (each gRPC port; the shim's /api/, /v1/ and /mcp) ---
# (service/token_guesses.py.) After this many wrong tokens from one client within the window, every request from it
# is refused for the refusal time, the right token included, so a guess is never tried (a probe made 5,000 guesses
# in 3.1 s). Generous enough for a person retyping a token, or a page whose few calls carry a stale one.
TOKEN_GUESSES_ALLOWED = 20
TOKEN_GUESS_WINDOW_SECONDS = 60.0
TOKEN_GUESS_REFUSAL_SECONDS = 60.0
# Clients remembered at once (a hundred bytes or so each); beyond it the one whose last wrong token is oldest is
# forgotten. An IPv6 client is its /64, the block one subscriber is given, so its addresses are one client.
TOKEN_GUESS_CLIENTS = 10_000
