"""An OpenAI-compatible chat API, for chat front ends that speak OpenAI's (Open WebUI, LibreChat, the `openai` SDK):
`GET /v1/models` and `POST /v1/chat/completions`, streamed or not, each only a client of the chat service.

A request's messages become one turn: the last user message is the question, the earlier user and assistant
messages its history (system messages are left out: the configured system prompt and persona apply). Nothing is
stored (ChatService.Answer), unless the `X-Secondbrain-Conversation` header names a conversation: then the question
is sent to it (SendMessage), which keeps its own history. The answer keeps its `[n]` markers and ends with the
passages it cites as a markdown list; the same passages are in the response's `secondbrain.sources` field (in the
last chunk of a stream). Errors have OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, with our
messages.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

import grpc
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.chat.v1 import chat_service_pb2_grpc as pb_grpc
from secondbrain.errors import InvalidInput
from secondbrain.gateway.backends import Backends
from secondbrain.gateway.http_errors import HTTP_STATUS, HttpError, from_rpc_error
from secondbrain.gateway.json_body import parse_json
from secondbrain.gateway.request_message import (
    BODY_TIMEOUT_SECONDS,
    REQUEST_TIMEOUT,
    body_within_limits,
    refuse_lone_surrogates,
)
from secondbrain.note_tools import formatting
from secondbrain.note_tools.answer_stream import AnswerStream
from secondbrain.service.convert import ROLE_VALUES
from secondbrain.v1 import retrieval_pb2 as common

# The model that answers with the chat settings' provider and model.
DEFAULT_MODEL = "secondbrain"
CONVERSATION_HEADER = "x-secondbrain-conversation"
# The asker's moment (ISO 8601 with its UTC offset), which "last week" in a question is read against: OpenAI's API
# has no field for it, and without it the server's clock (and `retrieve.time_zone`) decides.
NOW_HEADER = "x-secondbrain-now"
MAX_NOW_CHARS = 40
MAX_MODEL_CHARS = 200
# A conversation id is a UUID (36 characters); anything much longer is not one.
MAX_CONVERSATION_CHARS = 64
OPTIONS_TIMEOUT_SECONDS = 30.0
# A whole answer, not streamed, must be written within this.
ANSWER_TIMEOUT_SECONDS = 600.0

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


class _Part(BaseModel):
    type: str
    text: str = ""


class _Message(BaseModel):
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[_Part] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "\n".join(part.text for part in self.content if part.type == "text")
        return self.content or ""


class _StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    # Whether a last chunk carries the whole turn's token usage (Open WebUI asks for it).
    include_usage: StrictBool = False


class _Completion(BaseModel):
    # Sampling and other knobs (temperature, max_tokens, ...) are accepted and left to the configured model.
    model_config = ConfigDict(extra="allow")

    # No model id is near this long; a longer one is refused here, not echoed back by a service in a gRPC status
    # too large to send (which reached the client as a 429, which OpenAI's SDKs retry).
    model: str = Field(DEFAULT_MODEL, max_length=MAX_MODEL_CHARS)
    messages: list[_Message] = Field(min_length=1)
    # A boolean, as OpenAI's API takes it: "yes" or 1 is a mistake to report, not a true.
    stream: StrictBool = False
    stream_options: _StreamOptions | None = None


def _error(message: str, kind: str, code: str | None) -> dict[str, Any]:
    """OpenAI's error body."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def error_response(status: int, message: str, code: str | None = None) -> JSONResponse:
    return JSONResponse(_error(message, _ERROR_TYPES.get(status, "api_error"), code), status_code=status)


def _data(body: dict[str, Any] | str) -> bytes:
    """One server-sent event of a stream, as OpenAI sends them: a `data:` line only."""
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return f"data: {text}\n\n".encode()


def _model_choice(model: str) -> tuple[str, str]:
    """(provider, model) for a model id of /v1/models: `secondbrain` is the settings' own; `provider/model`."""
    if model in ("", DEFAULT_MODEL):
        return "", ""
    provider, _, name = model.partition("/")
    return provider, name


def _model_ids(options: pb.GetOptionsResponse) -> list[str]:
    """Every `provider/model` id /v1 answers with: the available providers' models."""
    return [
        f"{provider.id}/{model.id}" for provider in options.providers if provider.available for model in provider.models
    ]


def _usage(usage: Any) -> dict[str, int]:
    """A turn's token usage in OpenAI's words."""
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def _turn(body: _Completion) -> tuple[str, list[common.HistoryMessage]]:
    said = [m for m in body.messages if m.role in ("user", "assistant")]
    if not said or said[-1].role != "user":
        raise InvalidInput("the last message must be the user's question")
    history = [common.HistoryMessage(role=ROLE_VALUES[m.role], content=m.text()) for m in said[:-1]]
    return said[-1].text(), history


def _check_headers(conversation: str, now: str) -> None:
    """Too long to be what they name is a 400 here, before it could be a gRPC metadata error (a 429 SDKs retry)."""
    if len(conversation) > MAX_CONVERSATION_CHARS:
        raise InvalidInput(
            f"the {CONVERSATION_HEADER} header is {len(conversation)} characters long: a conversation id is a UUID, "
            "as CreateConversation returns it"
        )
    if len(now) > MAX_NOW_CHARS:
        raise InvalidInput(
            f"the {NOW_HEADER} header is {len(now)} characters long: write the moment as ISO 8601 with its UTC "
            "offset, like 2026-11-30T18:00:00+00:00"
        )


def _source(passage: common.Passage) -> dict[str, Any]:
    return {
        "number": passage.number,
        "path": passage.note_path,
        "title": passage.note_title,
        "heading_path": list(passage.heading_path),
        "start_line": passage.start_line,
        "end_line": passage.end_line,
    }


class OpenAICompat:
    """The two endpoints, over the shim's channel to the chat service."""

    def __init__(self, backends: Backends, body_timeout: float = BODY_TIMEOUT_SECONDS) -> None:
        self.backends = backends
        self.body_timeout = body_timeout

    @property
    def chat(self) -> pb_grpc.ChatServiceStub:
        return pb_grpc.ChatServiceStub(self.backends.channel("chat"))

    def _failure(self, error: grpc.aio.AioRpcError) -> HttpError:
        return from_rpc_error(error, "chat", self.backends.addresses["chat"])

    def _rpc_error(self, error: grpc.aio.AioRpcError) -> JSONResponse:
        failed = self._failure(error)
        status = failed.status or HTTP_STATUS.get(failed.code, 500)
        return error_response(status, failed.message, failed.code.name.lower())

    async def models(self, request: Request) -> Response:
        try:
            options = await self.chat.GetOptions(pb.GetOptionsRequest(), timeout=OPTIONS_TIMEOUT_SECONDS)
        except grpc.aio.AioRpcError as error:
            return self._rpc_error(error)
        defaults = options.defaults
        data = [{"id": DEFAULT_MODEL, "object": "model", "created": 0, "owned_by": "secondbrain",
                 "description": f"the configured default: {defaults.provider}/{defaults.model}"}]  # fmt: skip
        data += [
            {"id": model_id, "object": "model", "created": 0, "owned_by": model_id.partition("/")[0]}
            for model_id in _model_ids(options)
        ]
        return JSONResponse({"object": "list", "data": data})

    async def _unknown_model(self, model: str) -> Response | None:
        """OpenAI's 404 for a model id /v1/models does not list, naming the ones it does (in its ids, not the chat
        service's provider names); None for a known one."""
        if model in ("", DEFAULT_MODEL):
            return None
        try:
            options = await self.chat.GetOptions(pb.GetOptionsRequest(), timeout=OPTIONS_TIMEOUT_SECONDS)
        except grpc.aio.AioRpcError as error:
            return self._rpc_error(error)
        known = _model_ids(options)
        if model in known:
            return None
        return error_response(
            404,
            f"the model {model!r} does not exist here; choose one of: {', '.join([DEFAULT_MODEL, *known])}",
            "model_not_found",
        )

    async def completions(self, request: Request) -> Response:
        try:
            raw = await body_within_limits(request, self.body_timeout)
            data = parse_json(raw)
            # Before anything reads it: every string of the body (the model, each message and content part) goes
            # on into a protobuf, gRPC or the response, none of which can encode a lone surrogate. (The
            # conversation header cannot hold one: HTTP headers are bytes, decoded as Latin-1.)
            refuse_lone_surrogates(data, "request body")
            body = _Completion.model_validate(data)
            question, history = _turn(body)
            _check_headers(request.headers.get(CONVERSATION_HEADER, ""), request.headers.get(NOW_HEADER, ""))
        except HttpError as error:
            response = error_response(error.status or HTTP_STATUS.get(error.code, 400), error.message)
            if error.status == REQUEST_TIMEOUT:
                # The rest of the body may still be on its way: close rather than read it to find the next request.
                response.headers["connection"] = "close"
            return response
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in error.errors())
            return error_response(400, f"the request does not fit the chat completions API: {problems}")
        except InvalidInput as error:
            return error_response(400, str(error))
        # (A named conversation answers with its settings' model, whatever the request says.)
        if not request.headers.get(CONVERSATION_HEADER) and (unknown := await self._unknown_model(body.model)):
            return unknown
        call = self._call(request, body, question, history)
        try:
            first = await call.read()
        except grpc.aio.AioRpcError as error:
            call.cancel()
            return self._rpc_error(error)
        completion = f"chatcmpl-{uuid.uuid4().hex}"
        if body.stream:
            return StreamingResponse(
                self._chunks(
                    call,
                    first,
                    completion,
                    body.model,
                    body.stream_options is not None and body.stream_options.include_usage,
                ),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"},
            )
        return await self._whole(call, first, completion, body.model)

    def _call(
        self, request: Request, body: _Completion, question: str, history: list[common.HistoryMessage]
    ) -> grpc.aio.UnaryStreamCall:
        conversation = request.headers.get(CONVERSATION_HEADER)
        now = request.headers.get(NOW_HEADER, "")
        if conversation:
            send = pb.SendMessageRequest(conversation_id=conversation, content=question, now=now)
            return self.chat.SendMessage(send)
        provider, model = _model_choice(body.model)
        answer = pb.AnswerRequest(content=question, history=history, provider=provider, model=model, now=now)
        return self.chat.Answer(answer)

    async def _events(self, call: grpc.aio.UnaryStreamCall, first: object) -> AsyncIterator[Any]:
        try:
            message = first
            while message is not grpc.aio.EOF:
                yield message
                message = await call.read()
        finally:
            call.cancel()

    async def _whole(self, call: grpc.aio.UnaryStreamCall, first: object, completion: str, model: str) -> Response:
        turn = AnswerStream()
        try:
            async for event in self._events(call, first):
                if (error := turn.take(event)) is not None:
                    status = HTTP_STATUS.get(grpc.StatusCode[error.code], 500)
                    return error_response(status, error.message, error.code.lower())
        except grpc.aio.AioRpcError as error:
            return self._rpc_error(error)
        text, cited = turn.cited()
        usage = turn.usage
        return JSONResponse({
            "id": completion,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": formatting.answer(text, cited)},
                "finish_reason": "stop",
            }],
            "usage": _usage(usage),
            "secondbrain": {"sources": [_source(p) for p in cited]},
        })  # fmt: skip

    async def _chunks(
        self, call: grpc.aio.UnaryStreamCall, first: object, completion: str, model: str, include_usage: bool = False
    ) -> AsyncIterator[bytes]:
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
            return _data({"id": completion, "object": "chat.completion.chunk", "created": created, "model": model,
                          "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})  # fmt: skip

        turn = AnswerStream()
        yield chunk({"role": "assistant", "content": ""})
        try:
            async for event in self._events(call, first):
                if (error := turn.take(event)) is not None:
                    yield _data(_error(error.message, "api_error", error.code.lower()))
                    return
                if event.WhichOneof("event") == "delta":
                    yield chunk({"content": event.delta.text})
        except grpc.aio.AioRpcError as error:
            failed = self._failure(error)
            yield _data(_error(failed.message, "api_error", failed.code.name.lower()))
            return
        _, cited = turn.cited()
        if cited:
            yield chunk({"content": "\n\n" + formatting.sources_list(cited)})
        yield chunk({}, "stop", secondbrain={"sources": [_source(p) for p in cited]})
        if include_usage:  # as OpenAI sends it: one more chunk, with no choices and the usage
            yield _data({"id": completion, "object": "chat.completion.chunk", "created": created, "model": model,
                         "choices": [], "usage": _usage(turn.usage)})  # fmt: skip
        yield _data("[DONE]")
