"""OpenAI chat completions over the `openai` SDK; also Together, OpenRouter and Ollama, which speak it too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

import httpx2  # the HTTP client both SDKs are built on; its errors surface mid-stream
import openai

from secondbrain.llm.base import ChatProvider, broken_stream
from secondbrain.llm.types import ChatMessage, ChatRequest, StreamEvent, TextDelta, ToolCall, Usage
from secondbrain.providers import ProviderContext, RetryPolicy, connection_error, status_error

# Seconds to wait for the connection and between streamed chunks; a stalled stream fails instead of hanging.
READ_TIMEOUT_SECONDS = 60.0


class OpenAICompatibleProvider(ChatProvider):
    def __init__(
        self,
        context: ProviderContext,
        *,
        max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(context, retry)
        self.max_tokens_param = max_tokens_param
        self.client = openai.AsyncOpenAI(
            # Ollama needs no key, but the SDK insists on one.
            api_key=context.api_key or "unused",
            base_url=context.base_url,
            max_retries=0,  # retries happen in ChatProvider.stream, once for every vendor
            timeout=READ_TIMEOUT_SECONDS,
        )

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.extend(_message(m) for m in request.messages)
        arguments: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            self.max_tokens_param: request.max_tokens,
        }
        if request.temperature is not None:
            arguments["temperature"] = request.temperature
        if request.tools:
            arguments["tools"] = [
                {"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.input_schema}}
                for t in request.tools
            ]  # fmt: skip
            arguments["tool_choice"] = request.tool_choice
        return arguments

    async def _stream_once(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        try:
            stream = await self.client.chat.completions.create(**self._arguments(request))
        except openai.APIStatusError as error:
            raise _translate(self.context, error, request.model) from None
        except openai.APIConnectionError as error:
            raise connection_error(self.context, error) from None
        finish_reason: str | None = None
        usage: Any = None
        model = request.model
        # Tool calls arrive in pieces (id and name, then the arguments' JSON a little at a time), by index.
        calls: dict[int, dict[str, str]] = {}
        # `async with` closes the HTTP response however the loop ends, a consumer's cancel included.
        async with stream:
            try:
                async for chunk in stream:
                    model = chunk.model or model
                    if chunk.usage is not None:
                        usage = chunk.usage
                    for choice in chunk.choices:
                        if choice.delta and choice.delta.content:
                            yield TextDelta(choice.delta.content)
                        for piece in (choice.delta.tool_calls if choice.delta else None) or []:
                            call = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
                            call["id"] = piece.id or call["id"]
                            if piece.function is not None:
                                call["name"] = piece.function.name or call["name"]
                                call["arguments"] += piece.function.arguments or ""
                        if choice.finish_reason:
                            finish_reason = choice.finish_reason
            except (openai.APIError, httpx2.HTTPError) as error:
                # An error event in the stream, or the connection dropping part way.
                raise broken_stream(self.context, str(error) or type(error).__name__) from None
        if finish_reason is None:
            raise broken_stream(self.context, "the stream ended without a finish reason")
        for index in sorted(calls):
            call = calls[index]
            yield ToolCall(call["id"] or f"call_{index}", call["name"], call["arguments"])
        yield Usage(
            input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            output_tokens=getattr(usage, "completion_tokens", 0) or 0,
            stop_reason=finish_reason,
            model=model,
        )


def _message(message: ChatMessage) -> dict[str, Any]:
    """A message as OpenAI's API takes it: an assistant's tool calls, a tool's result for its call."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.tool_calls:
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
        return {"role": "assistant", "content": message.content or None, "tool_calls": calls}
    return {"role": message.role, "content": message.content}


def _translate(context: ProviderContext, error: openai.APIStatusError, model: str) -> Exception:
    body = error.body if isinstance(error.body, dict) else {}
    message = str(body.get("message") or error.message)
    return status_error(context, error.status_code, message, model, error.response.headers)
