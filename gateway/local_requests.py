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

import grpc
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from secondbrain.gateway.endpoints import OPENAI_PREFIX
from secondbrain.gateway.http_errors import error_response
from secondbrain.gateway.openai_compat import error_response as openai_error
from secondbrain.service.auth import LOOPBACK_NAMES, is_loopback_host, is_loopback_origin

__all__ = ["FOREIGN_HOST_REFUSAL", "LOOPBACK_NAMES", "LocalRequestsOnly", "from_this_machine"]

FOREIGN_HOST_REFUSAL = (
    "This secondbrain has no API token, so it answers only requests addressed to this machine (localhost, 127.0.0.1 "
    "or [::1]) from its own pages. Open it at http://localhost:<port>/, or set SECONDBRAIN_API_TOKEN to serve it "
    "under another name."
)
# What needs no check: a health probe reads nothing.
UNCHECKED_PATHS = frozenset({"/healthz"})


def from_this_machine(headers: Headers) -> bool:
    """Whether a request is addressed to a loopback name and, when a browser sent it for a page, from a page of one.
    A page whose referrer policy is no-referrer (ours) sends `Origin: null` with its own POSTs: that is a page of this
    origin when the browser says the request is same-origin (`Sec-Fetch-Site`), never one of another site."""
    if not is_loopback_host(headers.get("host", "")):
        return False
    origin = headers.get("origin")
    if origin is None or is_loopback_origin(origin):
        return True
    return origin.strip() == "null" and headers.get("sec-fetch-site") == "same-origin"


class LocalRequestsOnly:
    """Pure ASGI middleware for the shim with no token (see the module): a request for another name, or from a page
    of another origin, is refused with FOREIGN_HOST_REFUSAL (403; OpenAI's error shape under `/v1/`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in UNCHECKED_PATHS or from_this_machine(Headers(scope=scope)):
            await self.app(scope, receive, send)
            return
        if scope["path"].startswith(OPENAI_PREFIX):
            response = openai_error(403, FOREIGN_HOST_REFUSAL, "permission_denied")
        else:
            response = error_response(grpc.StatusCode.PERMISSION_DENIED, FOREIGN_HOST_REFUSAL)
        await response(scope, receive, send)
