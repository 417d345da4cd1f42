"""An endpoint's request message, filled from the HTTP request: its path parameters, then its JSON body (read within
limits of size and time) or its query string."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import grpc
from google.protobuf import message_factory
from google.protobuf.message import Message
from starlette.requests import Request

from secondbrain.errors import InvalidInput
from secondbrain.gateway.endpoints import Endpoint
from secondbrain.gateway.http_errors import HttpError
from secondbrain.gateway.json_body import parse_json
from secondbrain.gateway.proto_json import from_json, from_query

MAX_BODY_BYTES = 1024 * 1024
# The whole body must arrive within this, however steadily it trickles: a client that sends a byte now and then
# would otherwise hold a connection (and a request's worth of memory) for as long as it likes.
BODY_TIMEOUT_SECONDS = 10.0
CONTENT_TOO_LARGE = 413
REQUEST_TIMEOUT = 408
# JSON may escape half of a UTF-16 surrogate pair on its own ("\ud800"), and Python decodes that to a str no UTF-8
# encoder accepts: protobuf's, gRPC's and the JSON response's would each fail on it later, as a 500.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


async def body_within_limits(request: Request, within: float) -> bytes:
    """The body, refused as soon as it is known to be over MAX_BODY_BYTES: from its declared length before reading
    any of it, else while it streams in, so an endless body costs at most the limit; and refused when it is not all
    in after `within` seconds, however steadily it trickles."""
    too_large = HttpError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        f"the request body is over {MAX_BODY_BYTES // 1024 // 1024} MiB ({MAX_BODY_BYTES} bytes): send a smaller one",
        CONTENT_TOO_LARGE,
    )
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large
    body = bytearray()
    try:
        async with asyncio.timeout(within):
            async for part in request.stream():
                body += part
                if len(body) > MAX_BODY_BYTES:
                    raise too_large
    except TimeoutError:
        raise HttpError(
            grpc.StatusCode.DEADLINE_EXCEEDED,
            f"the request body did not all arrive within {within:g} s: send it in one go",
            REQUEST_TIMEOUT,
        ) from None
    return bytes(body)


def refuse_lone_surrogates(data: object, what: str) -> None:
    """InvalidInput naming the first string of decoded JSON `data` (a value, or an object's key) that holds a lone
    surrogate, as a dotted path such as `messages.0.content`; `what` names `data` in the message.

    One check for every door that reads JSON, so each refuses such text up front, whatever field it is in, in the
    same words. It walks with its own stack: a body nested as deep as the parser allows must not overflow Python's.
    """
    # (value, where it is, whether it is an object's key: a key cannot be named by itself, only by its object)
    pending: list[tuple[object, str, bool]] = [(data, "", False)]
    while pending:
        value, place, is_key = pending.pop()
        if isinstance(value, str):
            found = _LONE_SURROGATE.search(value)
            if found is None:
                continue
            if is_key:
                where = f"a field name of {place} in the {what}" if place else f"a field name in the {what}"
            else:
                where = f"{place} in the {what}" if place else f"the {what}"
            raise InvalidInput(
                f"{where} is not valid Unicode text: it contains a lone surrogate "
                f"(\\u{ord(found.group()):04x}, half of a UTF-16 pair without the other half); "
                "send the text as UTF-8, or escape a character beyond U+FFFF as a whole pair"
            )
        prefix = f"{place}." if place else ""
        if isinstance(value, dict):
            # Reversed onto the stack, so the first field in the body is the one named, its key before its value.
            for key, item in reversed(value.items()):
                pending.append((item, f"{prefix}{key}", False))
                pending.append((key, place, True))
        elif isinstance(value, list):
            pending.extend((item, f"{prefix}{index}", False) for index, item in reversed(list(enumerate(value))))


async def request_message(request: Request, endpoint: Endpoint, body_timeout: float) -> Message:
    """The RPC's request for `request`; InvalidInput for a body or query that does not fit it, HttpError for a body
    over the limits."""
    message = message_factory.GetMessageClass(endpoint.request)()
    if endpoint.has_body:
        raw = await body_within_limits(request, body_timeout)
        data = parse_json(raw)
        refuse_lone_surrogates(data, "request body")
        from_json(data, message, "request body")
        if request.method == "PATCH":
            _mask_from_body(message, data)
    else:
        params = {key: request.query_params.getlist(key) for key in request.query_params}
        from_json(from_query(params, endpoint.request), message, "query")
    for name in endpoint.path_parameters:
        setattr(message, name, request.path_params[name])
    return message


def _mask_from_body(message: Message, data: dict[str, Any]) -> None:
    """PATCH changes what the body names: without an explicit updateMask, the mask is the body's fields (as
    grpc-gateway does), so `{"title": "x"}` renames and leaves the rest alone."""
    fields = message.DESCRIPTOR.fields_by_name
    if "update_mask" not in fields or message.HasField("update_mask"):  # type: ignore[arg-type]
        return
    by_json_name = {field.json_name: field.name for field in message.DESCRIPTOR.fields}
    named = [by_json_name.get(key, key) for key in data]
    message.update_mask.paths.extend(name for name in named if name in fields)
