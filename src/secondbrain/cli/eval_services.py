"""The services `secondbrain eval` measures, wired in: vaults are synced through the ingest service's API, and notes
ranked with retrieval's own ranking (`Retriever.rank`, the stages before passages are assembled), so what the
evaluation measures is what a chat turn reads. The evaluation itself imports no service; this module is where it
meets them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
from rich.console import Console

from secondbrain.chat.citations import check_citations
from secondbrain.chat.v1 import chat_service_pb2 as chat_pb
from secondbrain.chat.v1 import chat_service_pb2_grpc as chat_grpc
from secondbrain.config import Config
from secondbrain.db import Database
from secondbrain.errors import InvalidInput
from secondbrain.evaluation import commands
from secondbrain.evaluation.answers import Answered
from secondbrain.evaluation.questions import Question
from secondbrain.evaluation.ranking import Arm, ArmUnavailable, ChunkHit
from secondbrain.evaluation.services import EvalServices
from secondbrain.ingest.commands import run_ingest, sync_in_process
from secondbrain.note_tools.answer_stream import AnswerStream
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.pipeline import Retriever
from secondbrain.retrieve.retrieval import Ranking, RetrievalOptions
from secondbrain.retrieve.server import build_retriever
from secondbrain.service.access import connect
from secondbrain.service.convert import ROLE_VALUES
from secondbrain.v1 import retrieval_pb2 as common

# A running chat service limits questions per client (30 a minute by default): a refused question is asked again
# this often, this many times, which outlasts a minute's bucket.
LIMITED_RETRY_SECONDS = 2.0
LIMITED_RETRIES = 45
ANSWER_TIMEOUT_SECONDS = 300.0


class RetrieverRanker:
    """Retrieval's ranking over one index, as the evaluation reads it (a `ChunkRanker`)."""

    def __init__(
        self, retriever: Retriever, paths: dict[int, str], pages: dict[int, tuple[int, int]] | None = None
    ) -> None:
        r = self.retriever = retriever

        def changed(**settings: object) -> Retriever:
            """The same retriever with some of its settings changed, whatever the vault's."""
            changed = r.settings.model_copy(update=settings)
            return Retriever(
                r.db, r.embedder, r.make_condenser, r.make_reranker, changed, r.embedder_unavailable_reason
            )

        self.with_links = changed(wikilink_expansion=True)  # the hybrid+links arm
        self.with_rrf = changed(fusion="rrf")  # the hybrid-rrf arm
        # Each indexed note's path by its id, as ranked chunks name it.
        self.paths = paths
        self.notes = set(paths.values())
        # The pages of each attachment's chunk that has them, by chunk id: (first, last).
        self.pages = pages or {}

    @classmethod
    async def open(cls, config: Config, db: Database) -> RetrieverRanker:
        async with db.pool.acquire() as connection:
            rows = await connection.fetch("SELECT id, path FROM vault_files")
            paged = await connection.fetch(
                "SELECT id, page_start, coalesce(page_end, page_start) AS page_end FROM vault_chunks "
                "WHERE page_start IS NOT NULL"
            )
        pages = {row["id"]: (row["page_start"], row["page_end"]) for row in paged}
        return cls(build_retriever(config, db), {row["id"]: row["path"] for row in rows}, pages)

    def options(self, arm: Arm, now: str = "") -> RetrievalOptions:
        return RetrievalOptions.resolve(
            self.retriever.settings,
            mode=arm.mode,  # type: ignore[arg-type]
            condense=True,
            alternates=arm.alternates,
            rerank=arm.rerank,
            now=now,
        )

    async def rank_chunks(self, question: Question, arm: Arm, depth: int) -> list[str]:
        if arm.alternates and self.retriever.condenser.provider is None:
            raise ArmUnavailable(f"alternates need a language model: {self.retriever.condenser.unavailable_reason}")
        retriever = self.with_links if arm.links else self.with_rrf if arm.rrf else self.retriever
        try:
            ranking = await retriever.rank(
                question.text, list(question.history), Filters(), self.options(arm, question.now), depth=depth
            )
        except InvalidInput as error:
            raise ArmUnavailable(str(error)) from None
        _check(arm, ranking)
        hits = []
        for ranked in ranking.ranked:
            candidate = ranked.fused.candidate
            path = self.paths.get(candidate.file_id)
            if path is not None:
                first, last = self.pages.get(candidate.chunk_id, (0, -1))
                hits.append(ChunkHit(path, tuple(range(first, last + 1))))
        return hits


def _check(arm: Arm, ranking: Ranking) -> None:
    if arm.mode != "lexical" and not ranking.vector_arm_ran:
        raise ArmUnavailable(f"the vector arm did not run: {ranking.vector_arm_skipped_reason}")
    if arm.rerank and not ranking.reranked:
        raise ArmUnavailable(f"no reranker ran: {ranking.rerank_skipped_reason or 'none is configured'}")


class ChatAnswerer:
    """Questions asked through ChatService.Answer (nothing stored), each with its history as the turns before it."""

    def __init__(self, chat: chat_grpc.ChatServiceStub) -> None:
        self.chat = chat

    async def answer(self, question: Question) -> Answered:
        request = chat_pb.AnswerRequest(
            content=question.text,
            history=[common.HistoryMessage(role=ROLE_VALUES[m.role], content=m.content) for m in question.history],
            now=question.now,
        )
        for _ in range(LIMITED_RETRIES):
            try:
                return await self._ask(request)
            except grpc.aio.AioRpcError as error:
                if error.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                    return Answered("", [], error.details() or error.code().name)
                await asyncio.sleep(LIMITED_RETRY_SECONDS)
        return Answered("", [], "the chat service kept refusing questions (its per-client limit)")

    async def _ask(self, request: chat_pb.AnswerRequest) -> Answered:
        stream = AnswerStream()
        async for event in self.chat.Answer(request, timeout=ANSWER_TIMEOUT_SECONDS):
            if (error := stream.take(event)) is not None:
                return Answered(stream.text, [], error.message)
        notes = {p.number: p.note_path for p in stream.passages}
        cited = check_citations(stream.text, list(notes)).cited
        return Answered(stream.text, list(dict.fromkeys(notes[number] for number in cited)))


@contextlib.asynccontextmanager
async def _open_answerer(config: Config) -> AsyncIterator[tuple[ChatAnswerer, str]]:
    console = Console(stderr=True)
    # A chat service started here answers only this evaluation: no per-client limit to wait on.
    config = dataclasses.replace(config, settings=config.settings.model_copy(update={"chat_messages_per_minute": 0}))
    async with connect(config, "chat", None, chat_grpc.ChatServiceStub, console, doing="answering") as chat:
        settings = (await chat.GetSettings(chat_pb.GetSettingsRequest(), timeout=30)).settings
        yield ChatAnswerer(chat), f"{settings.provider}:{settings.model}"


async def _sync(config: Config, vault: Path) -> int:
    return await run_ingest(config, vault, force=False, watch=False, address=None, as_json=False)


EVAL_SERVICES = EvalServices(
    sync=_sync, sync_here=sync_in_process, open_ranker=RetrieverRanker.open, open_answerer=_open_answerer
)

# `secondbrain eval` (bench/ runs it too).
run_eval = functools.partial(commands.run_eval, services=EVAL_SERVICES)
