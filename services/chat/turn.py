"""One turn of a conversation: the question in, a cited answer streamed out, both stored.

`Turns.send` is an async generator of domain events (turn_events.py): `Sources` (what the answer will read), in agent
mode the tool steps (`ToolCalled`, `ToolAnswered`: see agent.py), `Delta`s (the answer as it arrives), then `Done`, or
`Error` in place of whatever could not happen. Nothing here knows gRPC; the servicer
maps the events to the stream, one to one.

What is stored, and when:
- The question is stored before anything can fail, with a placeholder for its answer (see `store.start_turn`), so
  a question is never lost and concurrent turns keep each question next to its answer.
- Every turn that got that far ends with its assistant message filled in: `complete` with the answer, its sources
  (the whole retrieval result plus the numbers it cited), provider, model and usage; or `incomplete` with whatever
  text arrived and the error. That includes a turn whose retrieval failed (no text, no sources, the error), so
  reading the conversation later says why a question has no answer; `ErrorEvent.message_id` points at it.
- A DELETE of the conversation while the answer streams stops the turn (`deletion_watch`): the stream ends with
  NOT_FOUND saying so, and the provider's stream is closed.
- A client that goes away cancels the turn: the provider's stream is closed at once (so the upstream request stops
  and stops costing), and the answer row is closed with the truth whatever the moment: cancelled (with the text
  that had arrived), or complete or failed if that is what it already was. Every store runs to its end through a
  cancel (see `_outlast_cancellation`), so none is cut part way with its outcome unknown.

Validation (an empty or oversized question, an unknown conversation) raises before the first event, so the client
gets a plain status and nothing is stored. Turns share nothing mutable: no lock is held across a turn, and many
conversations stream at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from google.protobuf import json_format

from secondbrain.chat import store
from secondbrain.chat.agent import AgentLimits, AgentLoop, AgentRecord, ToolAnswered, ToolCalled
from secondbrain.chat.citations import Checked, check_citations
from secondbrain.chat.deletion_watch import ConversationDeleted, DeletionWatch
from secondbrain.chat.prompt import build_request
from secondbrain.chat.retrieve_client import RetrieveClient, RetrieveOptions
from secondbrain.chat.settings import ChatSettings, ResolvedSettings, check_mode
from secondbrain.chat.turn_events import Delta, Done, Error, Sources, TurnEvent
from secondbrain.chat.turn_input import (
    HISTORY_MESSAGES,
    WHOLE_VAULT,
    Scope,
    parse_conversation_id,
    title_from,
    validate_history,
    validate_question,
)
from secondbrain.db import Database
from secondbrain.errors import NotFound, SecondbrainError
from secondbrain.llm import ChatMessage, ProviderCatalog, TextDelta, Usage
from secondbrain.llm.base import ChatProvider
from secondbrain.llm.tokens import count_message_tokens
from secondbrain.service.observe import (
    CHAT_TURNS,
    PROVIDER_FIRST_TOKEN,
    PROVIDER_TOKENS,
    PROVIDER_TURN,
)
from secondbrain.v1 import retrieval_pb2 as common

log = logging.getLogger(__name__)
T = TypeVar("T")

# Retrieve condenses against the last few turns only (and caps what it accepts), so it is sent only those, each cut.
RETRIEVE_HISTORY_MESSAGES = 12
RETRIEVE_HISTORY_CHARS = 2_000

PLACEHOLDER_ERROR = "no answer yet: it is still being written, or the chat service stopped before it finished"
CANCELLED_ERROR = "the answer stopped part way because the client cancelled the request"
CANCELLED_BEFORE_ERROR = "the client cancelled the request before the answer began"
ABANDONED_ERROR = "the chat service stopped before this answer finished; ask again"
# How long storing a turn's question or outcome may take once its client has gone: a wait for a pooled connection
# and the statements, each already bounded by STATEMENT_TIMEOUT.
STORE_DEADLINE_SECONDS = 3 * store.STATEMENT_TIMEOUT


def sources_record(
    retrieval: common.RetrievalResult, cited: Sequence[int], agent: AgentRecord | None = None
) -> dict[str, Any]:
    """What the message's `sources` column holds: the retrieval result as proto JSON (with every passage a tool
    added), plus the numbers cited and how the answer was found."""
    record = json_format.MessageToDict(retrieval, preserving_proto_field_name=True)
    record["cited"] = list(cited)
    if agent is not None:
        record["agent"] = agent.as_dict()
    return record


async def _outlast_cancellation(work: Awaitable[T]) -> tuple[T, bool]:
    """Run `work` to its end (or STORE_DEADLINE_SECONDS) even if this task is cancelled meanwhile; its result, and
    whether a cancel arrived, which the caller raises once it has recorded what the work did.

    A store cancelled part way cannot say whether its transaction committed (the cancel may land during COMMIT), so
    it is never cancelled: only the wait for it is, and the wait is resumed.
    """

    async def bounded() -> T:
        async with asyncio.timeout(STORE_DEADLINE_SECONDS):
            return await work

    task = asyncio.ensure_future(bounded())
    cancelled = False
    while True:
        try:
            return await asyncio.shield(task), cancelled
        except asyncio.CancelledError:
            if task.cancelled():
                raise
            cancelled = True


@dataclass(frozen=True)
class _Opened:
    """What a turn read before it began, and the ids of its stored question and answer placeholder."""

    history: list[store.HistoryRow]
    user_message_id: int
    message_id: int
    persona: store.PersonaRow | None


@dataclass
class _Answer:
    """What a turn has produced so far, stored however it ends."""

    retrieval: common.RetrievalResult | None = None
    parts: list[str] = field(default_factory=list)
    provider: str = ""
    model: str = ""
    usage: Usage | None = None
    retrieval_ms: float = 0.0
    first_token_ms: float | None = None
    agent: AgentRecord | None = None

    def add_usage(self, usage: Usage) -> None:
        """A model call's usage; an agent turn makes several, and the turn's usage is their sum."""
        if self.usage is not None:
            usage = Usage(
                self.usage.input_tokens + usage.input_tokens,
                self.usage.output_tokens + usage.output_tokens,
                usage.stop_reason,
                usage.model,
            )
        self.usage = usage

    def checked(self) -> Checked:
        """The answer's text with citations of passages it was not given stripped, and the numbers it cites."""
        valid = [p.number for p in self.retrieval.passages] if self.retrieval is not None else []
        return check_citations("".join(self.parts), valid)


class Turns:
    def __init__(
        self,
        db: Database,
        settings: ChatSettings,
        catalog: ProviderCatalog,
        retrieve: RetrieveClient,
        agent_limits: AgentLimits | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.catalog = catalog
        self.retrieve = retrieve
        self.agent_limits = agent_limits or AgentLimits()

    async def send(
        self,
        conversation_id: str,
        content: str,
        scope: Scope = WHOLE_VAULT,
        mode: str = "",
    ) -> AsyncIterator[TurnEvent]:
        """`mode` ("rag" or "agent") overrides the settings' for this turn."""
        started = time.perf_counter()
        question = validate_question(content)
        conversation = parse_conversation_id(conversation_id)
        mode = check_mode(mode)
        settings = await self.settings.get()
        if mode:
            settings = replace(settings, mode=mode)
        # Carried through a client's cancel: once the question may be stored, whether it was must be known, so its
        # answer row is then closed as cancelled rather than left pending.
        opened, left = await _outlast_cancellation(self._open(conversation, question))
        if opened is None:
            raise NotFound(f"there is no conversation {conversation_id}; create one first")
        message_id = opened.message_id
        earlier = [ChatMessage(row.role, row.content) for row in opened.history]  # type: ignore[arg-type]
        answer = _Answer(provider=settings.provider, model=settings.model)
        if left:
            await self._store_cancelled(message_id, answer)
            raise asyncio.CancelledError

        # aclosing: when this turn is closed or cancelled mid-answer, so is the provider's stream, before the answer
        # is stored as cancelled.
        respond = self._respond(
            question, earlier, opened.persona, settings, scope, answer, opened.user_message_id, started
        )
        # Watched while it runs: a DELETE of the conversation (by any chat process) stops it; the watch also renews
        # the answer's lease with the text so far, kept if this process dies.
        watch = DeletionWatch(self.db, conversation_id, message_id, streamed=lambda: "".join(answer.parts))
        try:
            async with contextlib.aclosing(respond) as events:
                async for event in watch.until_deleted(events):
                    yield event
        except ConversationDeleted:
            CHAT_TURNS.labels("cancelled").inc()
            log.info("turn stopped: its conversation was deleted", extra={"conversation": conversation_id})
            raise
        except SecondbrainError as error:
            CHAT_TURNS.labels("error").inc()
            log.info("turn failed", extra={"conversation": conversation_id, "error": str(error)})
            await self._store(message_id, answer, error=str(error))
            yield Error(error, message_id)
            return
        except (asyncio.CancelledError, GeneratorExit):
            await self._store_cancelled(message_id, answer)
            raise
        except Exception:
            # A bug or a lost database: record what arrived if possible, then let the error mapping report it.
            try:
                await self._store(message_id, answer, error="the chat service failed part way")
            except Exception:  # the first failure is the one to report; this one is logged beside it
                log.exception("the answer of a failed turn could not be stored", extra={"message": message_id})
            raise

        cited = await self._store(message_id, answer, error="")
        yield self._done(message_id, answer, cited, started)

    async def answer(
        self,
        content: str,
        history: Sequence[ChatMessage],
        scope: Scope = WHOLE_VAULT,
        provider: str = "",
        model: str = "",
        mode: str = "",
    ) -> AsyncIterator[TurnEvent]:
        """A turn that is not stored: the question with the history its caller keeps, answered by the settings'
        provider and model (or `provider`/`model`, checked as the settings check them) in the settings' persona,
        and their mode (or `mode`). The events are `send`'s, their message ids None."""
        started = time.perf_counter()
        question = validate_question(content)
        earlier = validate_history(history)
        mode = check_mode(mode)
        settings = await self.settings.get()
        if provider or model:
            settings = self.settings.with_model(settings, provider, model)
        if mode:
            settings = replace(settings, mode=mode)
        async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
            persona = await store.get_persona(connection, settings.persona_id)
        answer = _Answer(provider=settings.provider, model=settings.model)
        respond = self._respond(question, earlier, persona, settings, scope, answer, None, started)
        try:
            async with contextlib.aclosing(respond) as events:
                async for event in events:
                    yield event
        except SecondbrainError as error:
            CHAT_TURNS.labels("error").inc()
            log.info("answer failed", extra={"error": str(error)})
            yield Error(error, None)
            return
        yield self._done(None, answer, answer.checked().cited, started)

    async def _respond(
        self,
        question: str,
        earlier: list[ChatMessage],
        persona: store.PersonaRow | None,
        settings: ResolvedSettings,
        scope: Scope,
        answer: _Answer,
        user_message_id: int | None,
        started: float,
    ) -> AsyncIterator[Sources | ToolCalled | ToolAnswered | Delta]:
        """What every turn does, stored or not: retrieve, then stream the model's answer (in agent mode, after the
        tool steps it takes), filling in `answer` as it comes. Raises SecondbrainError when retrieval or the provider
        fails."""
        retrieval_started = time.perf_counter()
        answer.retrieval = await self.retrieve.retrieve(
            question,
            [ChatMessage(m.role, m.content[:RETRIEVE_HISTORY_CHARS]) for m in earlier[-RETRIEVE_HISTORY_MESSAGES:]],
            scope,
            RetrieveOptions(
                settings.passages,
                settings.alternates,
                settings.rerank,
                settings.rerank_model,
                settings.provider,
                settings.model,
            ),
        )
        answer.retrieval_ms = (time.perf_counter() - retrieval_started) * 1000
        # A provider that cannot be used (no key) fails the turn after `sources`, as a provider's refusal would.
        try:
            provider: ChatProvider | None = self.catalog.provider(settings.provider)
        except SecondbrainError as error:
            provider, unusable = None, error
        if settings.mode == "agent":
            reason = provider.no_tools_reason if provider is not None else ""
            answer.agent = AgentRecord("rag", f"{reason}; this turn ran as rag") if reason else AgentRecord("agent")
        mode, mode_reason = (answer.agent.mode, answer.agent.mode_reason) if answer.agent else ("rag", "")
        yield Sources(user_message_id, answer.retrieval, mode, mode_reason)
        if provider is None:
            raise unusable

        preset = self.settings.model(settings.provider, settings.model)
        request, budget = build_request(
            model=settings.model,
            context_window=preset.context_window if preset is not None else 0,
            base_prompt=settings.system_prompt,
            persona_definition=persona.definition if persona is not None else "",
            passages=answer.retrieval.passages,
            history=earlier,
            question=question,
            dated_range=answer.retrieval.plan.dated_range,
            now=scope.now,
        )
        if mode == "agent":
            assert answer.agent is not None
            loop = AgentLoop(provider, self.retrieve.note_services(), self.agent_limits, answer.agent, answer.retrieval)
            # The tool results get what the history left of its share of the window.
            room = budget.history - count_message_tokens(request.messages[:-1])
            events = loop.run(request, room)
        else:
            events = provider.stream(request)
        # aclosing: when this generator is closed or cancelled mid-answer, the provider's stream (and its HTTP
        # request, or the tool call in flight) is closed right away, not whenever it is garbage-collected.
        async with contextlib.aclosing(events) as stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    if answer.first_token_ms is None:
                        answer.first_token_ms = (time.perf_counter() - started) * 1000
                    answer.parts.append(event.text)
                    yield Delta(event.text)
                elif isinstance(event, Usage):
                    answer.add_usage(event)
                elif isinstance(event, ToolCalled | ToolAnswered):
                    yield event

    @staticmethod
    def _done(message_id: int | None, answer: _Answer, cited: list[int], started: float) -> Done:
        """The last event of a turn that finished, its metrics recorded."""
        usage = answer.usage or Usage(0, 0, "", answer.model)
        total_ms = (time.perf_counter() - started) * 1000
        first_token_ms = answer.first_token_ms or total_ms
        timings = [("retrieval", answer.retrieval_ms), ("first_token", first_token_ms), ("total", total_ms)]
        if answer.agent is not None and answer.agent.steps:
            timings += [("tools", answer.agent.tools_ms), ("agent_overhead", answer.agent.overhead_ms)]
        model = usage.model or answer.model
        CHAT_TURNS.labels("complete").inc()
        PROVIDER_FIRST_TOKEN.labels(answer.provider, model).observe(first_token_ms / 1000)
        PROVIDER_TURN.labels(answer.provider, model).observe(total_ms / 1000)
        PROVIDER_TOKENS.labels(answer.provider, model, "input").inc(usage.input_tokens)
        PROVIDER_TOKENS.labels(answer.provider, model, "output").inc(usage.output_tokens)
        stop_reason = answer.agent.stop_reason if answer.agent is not None else ""
        return Done(message_id, usage, timings, answer.provider, model, cited, stop_reason)

    async def _open(self, conversation: uuid.UUID, question: str) -> _Opened | None:
        """Read what the turn needs and store its question with the answer's placeholder; None: no conversation.

        The question is stored last, so nothing after it can fail and leave its placeholder pending.
        """
        async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
            history = await store.recent_history(connection, conversation, HISTORY_MESSAGES)
            persona = await store.conversation_persona(connection, conversation)
            ids = await store.start_turn(connection, conversation, question, title_from(question), PLACEHOLDER_ERROR)
        return _Opened(history, *ids, persona) if ids is not None else None

    async def _store(self, message_id: int, answer: _Answer, *, error: str) -> list[int]:
        """`_finish`, carried to its end if the client leaves meanwhile (the cancel is raised once it is stored):
        the turn's outcome is what happened to the answer, not when the client went."""
        cited, left = await _outlast_cancellation(self._finish(message_id, answer, error=error))
        if left:
            raise asyncio.CancelledError
        return cited

    async def _store_cancelled(self, message_id: int, answer: _Answer) -> None:
        CHAT_TURNS.labels("cancelled").inc()
        error = CANCELLED_ERROR if answer.parts else CANCELLED_BEFORE_ERROR
        try:
            await self._store(message_id, answer, error=error)
        except Exception:  # the cancel goes on regardless; the sweep closes the row later, if nothing else can
            log.exception("the answer of a cancelled turn could not be stored", extra={"message": message_id})

    async def _finish(self, message_id: int, answer: _Answer, *, error: str) -> list[int]:
        """Fill in the turn's assistant message; returns the passage numbers the stored answer cites."""
        checked = answer.checked()
        if checked.removed:
            log.info("citations to missing passages stripped", extra={"numbers": checked.removed})
        usage = answer.usage
        # No retrieval, no call to a model: the message names no provider or model that did not write it.
        asked = answer.retrieval is not None
        model = (usage.model if usage is not None and usage.model else answer.model) if asked else ""
        async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
            await store.finish_turn(
                connection,
                message_id,
                content=checked.text,
                sources=(
                    sources_record(answer.retrieval, checked.cited, answer.agent)
                    if answer.retrieval is not None
                    else None
                ),
                provider=answer.provider if asked else "",
                model=model,
                input_tokens=usage.input_tokens if usage is not None else None,
                output_tokens=usage.output_tokens if usage is not None else None,
                status="complete" if not error else "incomplete",
                error=error,
            )
        return checked.cited
