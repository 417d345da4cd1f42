"""Anthropic's Messages API, streamed, over the `anthropic` SDK."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic
import httpx2  # the HTTP client both SDKs are built on; its errors surface mid-stream

from secondbrain.llm.base import ChatProvider, broken_stream
from secondbrain.llm.types import ChatMessage, ChatRequest, StreamEvent, TextDelta, ToolCall, Usage
from secondbrain.providers import ProviderContext, RetryPolicy, connection_error, status_error

READ_TIMEOUT_SECONDS = 60.0


class AnthropicProvider(ChatProvider):
    def __init__(self, context: ProviderContext, *, retry: RetryPolicy | None = None) -> None:
        super().__init__(context, retry)
        self.client = anthropic.AsyncAnthropic(
            api_key=context.api_key,
            base_url=context.base_url,
            max_retries=0,  # retries happen in ChatProvider.stream, once for every vendor
            timeout=READ_TIMEOUT_SECONDS,
        )

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": _messages(request.messages),
            "stream": True,
        }
        if request.system:
            arguments["system"] = request.system
        if request.temperature is not None:
            arguments["temperature"] = request.temperature
        if request.tools:
            arguments["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in request.tools
            ]
            arguments["tool_choice"] = {"type": request.tool_choice}
        return arguments

    async def _stream_once(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        try:
            stream = await self.client.messages.create(**self._arguments(request))
        except anthropic.APIStatusError as error:
            raise _translate(self.context, error, request.model) from None
        except anthropic.APIConnectionError as error:
            raise connection_error(self.context, error) from None
        input_tokens = output_tokens = 0
        stop_reason: str | None = None
        model = request.model
        stopped = False
        # A tool_use block's input arrives as JSON in pieces; the call is whole at the block's stop.
        calls: dict[int, dict[str, str]] = {}
        # `async with` closes the HTTP response however the loop ends, a consumer's cancel included.
        async with stream:
            try:
                async for event in stream:
                    if event.type == "message_start":
                        model = event.message.model or model
                        input_tokens = event.message.usage.input_tokens or 0
                        output_tokens = event.message.usage.output_tokens or 0
                    elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                        if event.delta.text:
                            yield TextDelta(event.delta.text)
                    elif event.type == "content_block_start" and event.content_block.type == "tool_use":
                        block = event.content_block
                        calls[event.index] = {"id": block.id, "name": block.name, "arguments": ""}
                    elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                        if event.index in calls:
                            calls[event.index]["arguments"] += event.delta.partial_json
                    elif event.type == "message_delta":
                        stop_reason = event.delta.stop_reason or stop_reason
                        output_tokens = event.usage.output_tokens or output_tokens
                    elif event.type == "message_stop":
                        stopped = True
            except (anthropic.APIError, httpx2.HTTPError) as error:
                # An `error` event in the stream (overloaded, for one), or the connection dropping part way.
                raise broken_stream(self.context, str(error) or type(error).__name__) from None
        if not stopped:
            raise broken_stream(self.context, "the stream ended before message_stop")
        for index in sorted(calls):
            call = calls[index]
            # A tool called with no arguments streams no input at all.
            yield ToolCall(call["id"], call["name"], call["arguments"] or "{}")
        yield Usage(input_tokens, output_tokens, stop_reason or "end_turn", model)


def _messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The conversation as Anthropic's API takes it: an assistant's tool calls are `tool_use` blocks after its text,
    and tool results are `tool_result` blocks of one user message (consecutive results share it)."""
    shaped: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            result = {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}
            if shaped and shaped[-1]["role"] == "user" and isinstance(shaped[-1]["content"], list):
                shaped[-1]["content"].append(result)
            else:
                shaped.append({"role": "user", "content": [result]})
        elif message.tool_calls:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": _input(c.arguments)}
                for c in message.tool_calls
            ]
            shaped.append({"role": "assistant", "content": blocks})
        else:
            shaped.append({"role": message.role, "content": message.content})
    return shaped


def _input(arguments: str) -> Any:
    """A call's arguments as the object Anthropic takes back; a model's bad JSON goes back as it was written."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:  # not JSON, or an integer of over 4,300 digits
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


def _translate(context: ProviderContext, error: anthropic.APIStatusError, model: str) -> Exception:
    body = error.body if isinstance(error.body, dict) else {}
    detail = body.get("error", {}) if isinstance(body.get("error"), dict) else {}
    message = str(detail.get("message") or error.message)
    return status_error(context, error.status_code, message, model, error.response.headers)
