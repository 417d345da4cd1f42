"""ChatService over gRPC: proto <-> domain only. Errors are mapped by secondbrain.service.error_mapping.

A failure inside a turn, after its question was stored, arrives as the stream's last event (`error`), with the same
status code name the error mapping would give it; a request refused before that (an empty question, an unknown
conversation) ends the stream with that status instead, and stores nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TypeVar

import grpc
from google.protobuf import json_format

from secondbrain.chat import store
from secondbrain.chat.agent import ToolAnswered, ToolCalled
from secondbrain.chat.app import Chat
from secondbrain.chat.rate_limit import RateLimiter
from secondbrain.chat.settings import SETTABLE, ResolvedSettings, SettingsChoices
from secondbrain.chat.turn_events import Delta, Done, Error, Sources, TurnEvent
from secondbrain.chat.turn_input import MAX_QUESTION_CHARS, Scope
from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.chat.v1 import chat_service_pb2_grpc as pb_grpc
from secondbrain.errors import ResourceExhausted, Unavailable
from secondbrain.llm.answer_text import gist
from secondbrain.retrieve.filters import Filters, parse_now
from secondbrain.service.convert import ROLE_VALUES, timestamp
from secondbrain.service.error_mapping import status_for
from secondbrain.service.history import history_from
from secondbrain.v1 import retrieval_pb2 as common

Event = TypeVar("Event", pb.SendMessageResponse, pb.AnswerResponse)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["ChatService"].full_name

STATUSES = {
    "complete": pb.MESSAGE_STATUS_COMPLETE,
    "incomplete": pb.MESSAGE_STATUS_INCOMPLETE,
    "pending": pb.MESSAGE_STATUS_PENDING,
}
RETRYABLE = (Unavailable, ResourceExhausted)


def settings_message(settings: ResolvedSettings) -> pb.Settings:
    return pb.Settings(
        provider=settings.provider,
        model=settings.model,
        persona_id=settings.persona_id,
        system_prompt=settings.system_prompt,
        system_prompt_is_default=settings.system_prompt_is_default,
        passages=settings.passages,
        alternates=settings.alternates,
        rerank=settings.rerank,
        rerank_model=settings.rerank_model,
        mode=settings.mode,
    )


def options_message(options: SettingsChoices) -> pb.GetOptionsResponse:
    return pb.GetOptionsResponse(
        providers=[
            pb.Provider(
                id=provider.id,
                display_name=provider.display_name,
                available=provider.available,
                unavailable_reason=provider.unavailable_reason,
                models=[
                    pb.Model(id=m.id, display_name=m.label, context_window=m.context_window) for m in provider.models
                ],
                default_model=provider.default_model,
            )
            for provider in options.providers
        ],
        personas=[pb.Persona(id=p.id, name=p.name, role=p.role, source=p.source) for p in options.personas],
        defaults=settings_message(options.defaults),
        max_question_chars=MAX_QUESTION_CHARS,
    )


def sources_message(sources: dict | None) -> common.RetrievalResult | None:
    """A stored sources record as the proto; its extra keys (the numbers cited, the agent run) are not part of
    RetrievalResult."""
    if sources is None:
        return None
    return json_format.ParseDict(sources, common.RetrievalResult(), ignore_unknown_fields=True)


def message_to_proto(row: store.MessageRow) -> pb.Message:
    message = pb.Message(
        id=str(row.id),
        role=ROLE_VALUES[row.role],
        content=row.content,
        sources=sources_message(row.sources),
        provider=row.provider,
        model=row.model,
        status=STATUSES[row.status],
        error=row.error,
        create_time=timestamp(row.created_at),
    )
    if row.sources is not None and "agent" in row.sources:
        json_format.ParseDict(row.sources["agent"], message.agent, ignore_unknown_fields=True)
    if row.input_tokens is not None or row.output_tokens is not None:
        message.usage.CopyFrom(pb.Usage(input_tokens=row.input_tokens or 0, output_tokens=row.output_tokens or 0))
    return message


def scope_from(request: pb.SendMessageRequest | pb.AnswerRequest) -> Scope:
    """The turn's scope, checked by retrieve's own rules before the turn starts: a bad date or now is refused with
    nothing stored, not an error after the question is."""
    filters = request.filters
    Filters.parse(filters.folders, filters.tags, filters.date_from, filters.date_to, filters.notes, filters.file_types)
    parse_now(request.now)
    return Scope(
        tuple(filters.folders),
        tuple(filters.tags),
        filters.date_from,
        filters.date_to,
        request.now,
        notes=tuple(filters.notes),
        file_types=tuple(filters.file_types),
    )


def conversation_message(row: store.ConversationRow, messages: list[store.MessageRow] | None = None) -> pb.Conversation:
    return pb.Conversation(
        id=str(row.id),
        title=row.title,
        persona_id=row.persona_id or "",
        create_time=timestamp(row.created_at),
        update_time=timestamp(row.updated_at),
        message_count=row.message_count,
        messages=[message_to_proto(m) for m in messages or []],
        preview=gist(row.first_answer),
    )


def turn_event(event: TurnEvent, message: type[Event] = pb.SendMessageResponse) -> Event:
    """One domain event of a turn as the stream's event, one to one (so a gateway maps each to one SSE event).
    `message` is SendMessage's event or Answer's, which has the same fields."""
    if isinstance(event, Sources):
        return message(
            sources=pb.SourcesEvent(
                user_message_id=_id(event.user_message_id),
                retrieval=event.retrieval,
                mode=event.mode,
                mode_reason=event.mode_reason,
            )
        )
    if isinstance(event, Delta):
        return message(delta=pb.DeltaEvent(text=event.text))
    if isinstance(event, ToolCalled):
        return message(tool_call=pb.ToolCallEvent(id=event.id, tool=event.tool, arguments=event.arguments))
    if isinstance(event, ToolAnswered):
        return message(
            tool_result=pb.ToolResultEvent(
                id=event.id,
                summary=event.summary,
                passage_numbers=event.numbers,
                passages=event.passages,
                error=event.error,
            )
        )
    if isinstance(event, Done):
        return message(
            done=pb.DoneEvent(
                message_id=_id(event.message_id),
                usage=pb.Usage(input_tokens=event.usage.input_tokens, output_tokens=event.usage.output_tokens),
                timings=[common.StageTiming(stage=stage, milliseconds=ms) for stage, ms in event.timings],
                provider=event.provider,
                model=event.model,
                agent_stop_reason=event.agent_stop_reason,
            )
        )
    assert isinstance(event, Error)
    return message(
        error=pb.ErrorEvent(
            code=status_for(event.error).name,
            message=str(event.error),
            retryable=isinstance(event.error, RETRYABLE),
            message_id=_id(event.message_id),
        )
    )


def _id(value: int | None) -> str:
    """A stored message's id as the API spells it; empty for a turn that stores nothing."""
    return "" if value is None else str(value)


class ChatServicer(pb_grpc.ChatServiceServicer):
    def __init__(self, chat: Chat, limiter: RateLimiter) -> None:
        self.chat = chat
        self.limiter = limiter

    async def GetOptions(
        self, request: pb.GetOptionsRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetOptionsResponse:
        return options_message(await self.chat.settings.options())

    async def GetSettings(
        self, request: pb.GetSettingsRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetSettingsResponse:
        return pb.GetSettingsResponse(settings=settings_message(await self.chat.settings.get()))

    async def UpdateSettings(
        self, request: pb.UpdateSettingsRequest, context: grpc.aio.ServicerContext
    ) -> pb.UpdateSettingsResponse:
        values = {name: getattr(request.settings, name) for name in SETTABLE}
        settings = await self.chat.settings.update(
            values, list(request.update_mask.paths), reset_system_prompt=request.reset_system_prompt
        )
        return pb.UpdateSettingsResponse(settings=settings_message(settings))

    async def ListConversations(
        self, request: pb.ListConversationsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListConversationsResponse:
        page = await self.chat.conversations.list(request.page_size, request.page_token, request.query)
        return pb.ListConversationsResponse(
            conversations=[conversation_message(row) for row in page.conversations],
            next_page_token=page.next_page_token,
        )

    async def CreateConversation(
        self, request: pb.CreateConversationRequest, context: grpc.aio.ServicerContext
    ) -> pb.CreateConversationResponse:
        row = await self.chat.conversations.create(request.title, request.persona_id)
        return pb.CreateConversationResponse(conversation=conversation_message(row))

    async def GetConversation(
        self, request: pb.GetConversationRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetConversationResponse:
        found = await self.chat.conversations.get(request.id)
        return pb.GetConversationResponse(conversation=conversation_message(found.row, found.messages))

    async def UpdateConversation(
        self, request: pb.UpdateConversationRequest, context: grpc.aio.ServicerContext
    ) -> pb.UpdateConversationResponse:
        row = await self.chat.conversations.update(
            request.id, request.title, request.persona_id, list(request.update_mask.paths)
        )
        return pb.UpdateConversationResponse(conversation=conversation_message(row))

    async def DeleteConversation(
        self, request: pb.DeleteConversationRequest, context: grpc.aio.ServicerContext
    ) -> pb.DeleteConversationResponse:
        await self.chat.conversations.delete(request.id)
        return pb.DeleteConversationResponse()

    async def ExportConversation(
        self, request: pb.ExportConversationRequest, context: grpc.aio.ServicerContext
    ) -> pb.ExportConversationResponse:
        exported = await self.chat.conversations.export(request.id)
        return pb.ExportConversationResponse(markdown=exported.markdown, file_name=exported.file_name)

    async def SendMessage(
        self, request: pb.SendMessageRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.SendMessageResponse]:
        self.limiter.check_call(context)
        turn = self.chat.turns.send(request.conversation_id, request.content, scope_from(request), request.mode)
        # aclosing: however this stream ends (a client cancel included), the turn is closed now, so it stops its
        # provider stream and stores the partial answer at once.
        async with contextlib.aclosing(turn) as events:
            async for event in events:
                yield turn_event(event)

    async def Answer(
        self, request: pb.AnswerRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.AnswerResponse]:
        self.limiter.check_call(context)
        turn = self.chat.turns.answer(
            request.content,
            history_from(request.history),
            scope_from(request),
            request.provider,
            request.model,
            request.mode,
        )
        async with contextlib.aclosing(turn) as events:
            async for event in events:
                yield turn_event(event, pb.AnswerResponse)
