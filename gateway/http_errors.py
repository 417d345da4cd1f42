"""gRPC status codes as HTTP statuses, the one JSON error body the shim sends, and what a failed call means to an
HTTP client.

The mapping is the one Google's HTTP APIs and grpc-gateway use, so a client that knows either knows this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc
from starlette.responses import JSONResponse

HTTP_STATUS: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.OK: 200,
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
    grpc.StatusCode.UNAUTHENTICATED: 401,
}

# What a gRPC channel says when nothing listens at the address.
_UNREACHABLE = ("failed to connect", "connection refused", "connections to all backends failing", "dns resolution")

# What a gRPC channel says when the connection under a call broke part way (the service was killed or restarted).
_BROKEN = ("socket closed", "stream removed", "connection reset", "broken pipe", "end of tcp stream")

# Worth trying again as it is: the same request may succeed later.
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED})

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "status", "message", "retryable"],
            "properties": {
                "code": {"type": "string", "description": "The gRPC status code name, such as NOT_FOUND."},
                "status": {"type": "integer", "description": "The HTTP status."},
                "message": {"type": "string", "description": "What went wrong and what to do about it."},
                "retryable": {"type": "boolean", "description": "Whether the same request may work later."},
            },
        }
    },
}


def error_body(code: grpc.StatusCode, message: str, status: int | None = None) -> dict[str, Any]:
    """The error body; `status` overrides the code's HTTP status where HTTP has a more exact one."""
    return {
        "error": {
            "code": code.name,
            "status": status or HTTP_STATUS.get(code, 500),
            "message": message,
            "retryable": code in RETRYABLE,
        }
    }


class HttpError(Exception):
    """A request the shim answers with an error body: the gRPC code, and `status` where HTTP has a more exact one."""

    def __init__(self, code: grpc.StatusCode, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def error_response(
    code: grpc.StatusCode, message: str, headers: Mapping[str, str] | None = None, status: int | None = None
) -> JSONResponse:
    status = status or HTTP_STATUS.get(code, 500)
    return JSONResponse(error_body(code, message, status), status_code=status, headers=headers)


def not_found(path: str) -> JSONResponse:
    message = f"nothing is served at {path}; the API is listed at /api/openapi.json"
    return error_response(grpc.StatusCode.NOT_FOUND, message)


def from_rpc_error(error: grpc.aio.AioRpcError, service: str, address: str) -> HttpError:
    """A failed call to `service` at `address`; a service that is not listening is named, with how to start it."""
    code, details = error.code(), error.details() or ""
    if code == grpc.StatusCode.UNAVAILABLE and any(sign in details.lower() for sign in _UNREACHABLE):
        details = (
            f"the {service} service is not answering at {address}: start it (`secondbrain up` runs everything), "
            "then try again"
        )
    elif code == grpc.StatusCode.UNAVAILABLE and any(sign in details.lower() for sign in _BROKEN):
        details = (
            f"the connection to the {service} service at {address} broke part way ({details}): it stopped or "
            "restarted; try again once it is back"
        )
    return HttpError(code, details or code.name)
