"""With no API token, requests from this machine only: the rule the gateway's two HTTP doors (Envoy and the shim)
keep alike.

Without a token every server listens on loopback, which keeps other machines out but not a web page in the user's own
browser. A page elsewhere can reach a loopback server two ways: by rebinding its own name to 127.0.0.1 (DNS rebinding;
the request then names the attacker's host, and the page reads the answers as its own origin's), or by posting to it
outright (a "simple" cross-site request: the page cannot read the answer, but it can start a turn that spends the
user's LLM key, or change the settings). So a request must be addressed to a loopback name (its Host), and a request
a browser sends for a page (its Origin) must come from a loopback origin too. With a token, the token decides: a page
elsewhere has no way to send it.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import grpc
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from secondbrain.gateway.endpoints import OPENAI_PREFIX
from secondbrain.gateway.http_errors import error_response
from secondbrain.gateway.openai_compat import error_response as openai_error

# The names Envoy routes when only loopback names are served (it matches them without the port). Browsers resolve
# `localhost` and every `*.localhost` to loopback themselves, never through DNS, so a page cannot rebind them.
LOOPBACK_NAMES = ("localhost", "*.localhost", "127.0.0.1", "[::1]")
FOREIGN_HOST_REFUSAL = (
    "This secondbrain has no API token, so it answers only requests addressed to this machine (localhost, 127.0.0.1 "
    "or [::1]) from its own pages. Open it at http://localhost:<port>/, or set SECONDBRAIN_API_TOKEN to serve it "
    "under another name."
)
# What needs no check: a health probe reads nothing.
OPEN_PATHS = frozenset({"/healthz"})


def is_loopback_host(host: str) -> bool:
    """Whether a Host header's name (`localhost:8080`, `[::1]`, `127.0.0.2`) is this machine's by a loopback name."""
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1 : name.find("]")] if "]" in name else ""
    elif name.count(":") == 1:
        name = name.rsplit(":", 1)[0]
    name = name.rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_loopback_origin(origin: str) -> bool:
    """Whether an Origin header (`http://localhost:8080`) is a page served from this machine by a loopback name;
    "null" (a sandboxed frame, a file) is not."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc) and is_loopback_host(parts.netloc)


class LocalRequestsOnly:
    """Pure ASGI middleware for the shim with no token (see the module): a request for another name, or from a page
    of another origin, is refused with FOREIGN_HOST_REFUSAL (403; OpenAI's error shape under `/v1/`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if is_loopback_host(headers.get("host", "")) and (origin is None or is_loopback_origin(origin)):
            await self.app(scope, receive, send)
            return
        if scope["path"].startswith(OPENAI_PREFIX):
            response = openai_error(403, FOREIGN_HOST_REFUSAL, "permission_denied")
        else:
            response = error_response(grpc.StatusCode.PERMISSION_DENIED, FOREIGN_HOST_REFUSAL)
        await response(scope, receive, send)
