"""Anthropic's Messages API wire protocol.

A stream is the real event sequence (message_start, content_block_start, ping, content_block_delta..., content_block
_stop, message_delta, message_stop), each as `event:` plus `data:` lines, because the anthropic SDK dispatches on the
event name: it skips `ping`, raises on `error` (an `APIStatusError` carrying the 200 of the stream) and its
`messages.stream()` helper rebuilds the final message, stop reason and usage from these events alone.
"""

from __future__ import annotations

import uuid
from typing import Any

from aiohttp import web

from .base import SSEPlan, WireServer, json_body, scripted_error, sse_frame
from .script import Reply

_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def anthropic_error_body(message: str, error_type: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def anthropic_error(reply: Reply) -> dict[str, Any]:
    default_type = _ERROR_TYPES.get(reply.status, "api_error" if reply.status >= 500 else "invalid_request_error")
    return anthropic_error_body(reply.error_message, reply.error_type or default_type)


def _message(
    model: str, *, content: list[dict[str, Any]], stop_reason: str | None, input_tokens: int, output_tokens: int
) -> dict[str, Any]:
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "content": content,
        "model": model,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def _event(data: dict[str, Any]) -> bytes:
    return sse_frame(data, event=data["type"])


def _stop_reason(reply: Reply) -> str:
    return reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")


def _tool_use_events(reply: Reply) -> list[bytes]:
    """Each tool call as Anthropic streams it, after the text block: a `tool_use` block whose input arrives as
    `input_json_delta` pieces."""
    events = []
    for offset, call in enumerate(reply.tool_calls):
        index = offset + 1
        block = {"type": "tool_use", "id": reply.call_id(offset), "name": call.name, "input": {}}
        events.append(_event({"type": "content_block_start", "index": index, "content_block": block}))
        for piece in call.argument_pieces():
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(_event({"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(_event({"type": "content_block_stop", "index": index}))
    return events


def _event_plan(model: str, reply: Reply) -> SSEPlan:
    # As Anthropic does: the opening message has no content or stop reason yet, and counts one output token.
    start = _message(model, content=[], stop_reason=None, input_tokens=reply.usage[0], output_tokens=1)
    message_delta = {
        "type": "message_delta",
        "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
        "usage": {"output_tokens": reply.usage[1]},
    }
    return SSEPlan(
        opening=[
            _event({"type": "message_start", "message": start}),
            _event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            _event({"type": "ping"}),
        ],
        delta=lambda text: _event(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
        ),
        closing=[
            _event({"type": "content_block_stop", "index": 0}),
            *_tool_use_events(reply),
            _event(message_delta),
            _event({"type": "message_stop"}),
        ],
        failure=_event(anthropic_error_body(reply.error_message, reply.error_type or "overloaded_error")),
    )


class AnthropicServer(WireServer):
    """`POST /v1/messages`; `base_url` is the root, because the anthropic SDK appends `/v1/messages` itself."""

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/v1/messages", self._messages)]

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await json_body(request)
        reply = self.script.next()
        if (error := scripted_error(reply, anthropic_error)) is not None:
            return error
        model = str(body.get("model", ""))
        if body.get("stream"):
            return await self.answer_sse(request, reply, _event_plan(model, reply))
        tools = [
            {"type": "tool_use", "id": reply.call_id(index), "name": call.name, "input": call.arguments}
            for index, call in enumerate(reply.tool_calls)
        ]
        message = _message(
            model,
            content=[{"type": "text", "text": reply.text}, *tools],
            stop_reason=_stop_reason(reply),
            input_tokens=reply.usage[0],
            output_tokens=reply.usage[1],
        )
        return await self.answer_json(request, reply, message, waits=len(reply.deltas))
