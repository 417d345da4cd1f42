"""How large a request each RPC takes: one table, read by the server (gRPC's own limit) and by the error mapping.

A conversation id is not 16 MB. Each method is allowed what its largest honest request needs and no more, so a
caller cannot make a service read and parse a large message that no handler wants. The server's gRPC limit is the
largest of its methods' (gRPC refuses anything over it before the message is whole); a request over its own
method's limit is refused with RESOURCE_EXHAUSTED before it is parsed.
"""

from __future__ import annotations

from collections.abc import Iterable

KIB = 1024
MIB = 1024 * KIB

# Ids, names, a question, filters, a page token: every request not listed below.
DEFAULT_REQUEST_BYTES = 64 * KIB

REQUEST_BYTES: dict[str, int] = {
    # A note's whole text: ingest.max_file_bytes is 10 MB by default, and UTF-8 travels as it is stored.
    "/secondbrain.ingest.v1.IngestService/UpsertNote": 16 * MIB,
    # The history: up to 200,000 characters, at up to four bytes each in UTF-8, with the question and filters.
    "/secondbrain.retrieve.v1.RetrieveService/Retrieve": 1 * MIB,
    # A system prompt (up to 20,000 characters) and a question (up to 8,000) need far less, but these two are what
    # the browser sends through the shim, which takes bodies up to 1 MiB: at the same limit, a REST caller with a
    # long text gets the chat service's own reason (the question is over 8,000 characters), not a size refusal.
    "/secondbrain.chat.v1.ChatService/UpdateSettings": 1 * MIB,
    "/secondbrain.chat.v1.ChatService/SendMessage": 1 * MIB,
    # A caller's own history: up to 400,000 characters (chat's MAX_HISTORY_CHARS), up to four bytes each in UTF-8.
    "/secondbrain.chat.v1.ChatService/Answer": 2 * MIB,
}

# What the server sends back is ours, and can be large (a long conversation, many passages).
MAX_RESPONSE_BYTES = 16 * MIB

# Requests that may be megabytes (a method taking more than METERED_OVER) are read and handled within one budget per
# process (`request_budget.py`): a call reserves its method's limit before its request is read, then keeps the
# request's own size until it ends. Four notes of 16 MiB at once, or hundreds of ordinary ones.
METERED_OVER = 2 * MIB
REQUEST_BYTES_IN_FLIGHT = 64 * MIB


def request_limit(method: str) -> int:
    """The largest request `method` ("/package.Service/Method") takes, in bytes."""
    return REQUEST_BYTES.get(method, DEFAULT_REQUEST_BYTES)


def metered(method: str) -> bool:
    """Whether `method`'s requests are read within the process's REQUEST_BYTES_IN_FLIGHT."""
    return request_limit(method) > METERED_OVER


def server_request_limit(services: Iterable[str]) -> int:
    """gRPC's own limit for a server of `services` (full names): the largest of any of their methods."""
    prefixes = tuple(f"/{name}/" for name in services)
    listed = [size for method, size in REQUEST_BYTES.items() if method.startswith(prefixes)]
    return max([DEFAULT_REQUEST_BYTES, *listed])


def describe(size: int) -> str:
    """`size` bytes the way a person reads it: 64 KiB, 16 MiB."""
    return f"{size // MIB} MiB" if size >= MIB and size % MIB == 0 else f"{size // KIB} KiB"
