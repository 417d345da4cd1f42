"""OpenAI's wire protocol for chat completions and embeddings.

The same shape stands in for every OpenAI-compatible provider (Together, OpenRouter, Ollama's /v1), so one server
tests all of their clients. Details the openai SDK depends on are kept exact: a stream ends with `data: [DONE]`; the
usage chunk (empty `choices`) comes only when `stream_options.include_usage` is set, and then the other chunks carry
`usage: null`; an in-stream failure is a data line holding an `error` object, which the SDK raises as `APIError`.
The SDK asks for base64 embeddings unless the caller names a format, so both encodings are served.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from aiohttp import web

from .base import SSEPlan, WireServer, json_body, scripted_error, sse_frame
from .script import Reply
from .vectors import DEFAULT_DIMENSIONS, count_tokens, embed, to_base64

# status -> (error type, error code), as OpenAI answers them.
_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def openai_error_body(message: str, error_type: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def openai_error(reply: Reply) -> dict[str, Any]:
    default_type, code = _ERROR_KINDS.get(
        reply.status, ("server_error" if reply.status >= 500 else "invalid_request_error", None)
    )
    return openai_error_body(reply.error_message, reply.error_type or default_type, code)


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _finish_reason(reply: Reply) -> str:
    return reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop")


def _completion(model: str, reply: Reply) -> dict[str, Any]:
    # As OpenAI answers: no text beside tool calls is null, not "".
    content = reply.text or (None if reply.tool_calls else "")
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": reply.call_id(index),
                "type": "function",
                "function": {"name": call.name, "arguments": call.json_text()},
            }
            for index, call in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish_reason(reply)}],
        "usage": _usage(*reply.usage),
    }


def _chunk_plan(model: str, reply: Reply, *, include_usage: bool) -> SSEPlan:
    head = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": None,
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return sse_frame({**head, "choices": [choice], **({"usage": None} if include_usage else {})})

    # Each tool call as OpenAI streams it: its id and name first, then its arguments' JSON in pieces.
    calls = []
    for index, call in enumerate(reply.tool_calls):
        named = {"index": index, "id": reply.call_id(index), "type": "function",
                 "function": {"name": call.name, "arguments": ""}}  # fmt: skip
        calls.append(chunk({"tool_calls": [named]}))
        calls += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in call.argument_pieces()
        ]
    closing = [*calls, chunk({}, _finish_reason(reply))]
    if include_usage:
        closing.append(sse_frame({**head, "choices": [], "usage": _usage(*reply.usage)}))
    closing.append(sse_frame("[DONE]"))
    failure = openai_error_body(reply.error_message, reply.error_type or "server_error")
    return SSEPlan(
        opening=[chunk({"role": "assistant", "content": ""})],
        delta=lambda text: chunk({"content": text}),
        closing=closing,
        failure=sse_frame(failure),
    )


def _embedding_texts(value: Any) -> list[str] | None:
    """The texts of an embeddings `input`: a string, strings, or token arrays (embedded as the text of their ids)."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(item, int) for item in value):
        return [" ".join(map(str, value))]
    if all(isinstance(item, list) and item and all(isinstance(i, int) for i in item) for item in value):
        return [" ".join(map(str, item)) for item in value]
    if all(isinstance(item, str) for item in value):
        return value
    return None


class OpenAIServer(WireServer):
    """`POST /v1/chat/completions` and `POST /v1/embeddings`; `base_url` ends in `/v1`, as the openai SDK expects.

    `dimensions` is the embedding size when a request names none; with `max_input_tokens`, an input of more
    whitespace-separated words fails with OpenAI's context-length error (for testing bisect-and-retry).
    """

    def __init__(self, *, dimensions: int = DEFAULT_DIMENSIONS, max_input_tokens: int | None = None) -> None:
        super().__init__()
        self.dimensions = dimensions
        self.max_input_tokens = max_input_tokens

    @property
    def openai_base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def base_url(self) -> str:
        return self.openai_base_url

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/v1/chat/completions", self._chat_completions),
            web.post("/v1/embeddings", self._embeddings),
        ]

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        body = await json_body(request)
        reply = self.script.next()
        if (error := scripted_error(reply, openai_error)) is not None:
            return error
        model = str(body.get("model", ""))
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await self.answer_sse(request, reply, _chunk_plan(model, reply, include_usage=include_usage))
        return await self.answer_json(request, reply, _completion(model, reply), waits=len(reply.deltas))

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await json_body(request)
        reply = self.script.next()
        if (error := scripted_error(reply, openai_error)) is not None:
            return error
        texts = _embedding_texts(body.get("input"))
        if texts is None or "" in texts:
            message = (
                "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."
            )
            return web.json_response(openai_error_body(message, "invalid_request_error"), status=400)
        counts = [count_tokens(text) for text in texts]
        if self.max_input_tokens is not None and (over := [n for n in counts if n > self.max_input_tokens]):
            message = (
                f"This model's maximum context length is {self.max_input_tokens} tokens, however you requested "
                f"{over[0]} tokens ({over[0]} in your prompt; 0 for the completion). "
                "Please reduce your prompt; or completion length."
            )
            return web.json_response(openai_error_body(message, "invalid_request_error"), status=400)
        dimensions = int(body.get("dimensions") or self.dimensions)
        base64 = body.get("encoding_format") == "base64"
        data = [
            {"object": "embedding", "index": index, "embedding": to_base64(vector) if base64 else vector}
            for index, vector in enumerate(embed(text, dimensions) for text in texts)
        ]
        tokens = sum(counts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return await self.answer_json(
            request, reply, {"object": "list", "data": data, "model": body.get("model"), "usage": usage}
        )
