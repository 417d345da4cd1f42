"""The retrieval pipeline (design record, section 4): condense, hybrid search per query, fuse across queries,
(link candidates,) rerank, expand, number. One call per chat turn; it streams a plan, the passages, then timings.

What a retrieval takes and gives (options, plan, passages) is `retrieval`; nothing here knows about gRPC: the
servicer maps those events to the proto.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from secondbrain.date_sources import read_as_of_latest
from secondbrain.db import Database
from secondbrain.db.embedding_model import ModelRecord, current_model
from secondbrain.embedding import Embedder
from secondbrain.errors import InvalidInput, SecondbrainError
from secondbrain.llm import ChatMessage
from secondbrain.retrieve import store, time_scope
from secondbrain.retrieve.chunk_text import body_of
from secondbrain.retrieve.condense import Condensed, Condenser, PlannedQuery
from secondbrain.retrieve.expand import Excerpt, PassageText, assemble, plan_spans, within_budget
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.fusion import Candidate, Fused, Fusion, fuse_queries
from secondbrain.retrieve.modes import Mode
from secondbrain.retrieve.question_time import EDGE_CHARS
from secondbrain.retrieve.rerank import Reranker
from secondbrain.retrieve.retrieval import (
    Decisions,
    Done,
    Passage,
    Plan,
    RankedChunk,
    Ranking,
    RetrievalOptions,
    RetrieveEvent,
    validate_query,
)
from secondbrain.retrieve.time_events import event_day, named_event_day
from secondbrain.vault_config import RetrieveSection

log = logging.getLogger(__name__)

STATEMENT_TIMEOUT_SECONDS = 10.0
LINK_SOURCES = 3  # top passages whose linked notes may join


# How many passages about an event ("the roofer's inspection") are looked through for the best one the note dates.
EVENT_DEPTH = 10
# Of those, how many are read for the event's day; a passage the notes date to a span this long or longer (a month's
# review, a note of a year) dates an event only by a day it names for it.
EVENT_PASSAGES = EVENT_DEPTH
EVENT_SPAN_DAYS = 8
# A year in an event's name: the event is looked for among that year's notes.
_EVENT_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")


async def _no_day() -> None:
    return None


def _told_by(filters: Filters, today: date) -> Filters:
    """`filters` kept to days up to `today`: an event the asker tells of has happened by their now."""
    return replace(filters, date_to=min(filters.date_to, today) if filters.date_to else today)


@dataclass
class _Clock:
    timings: list[tuple[str, float]] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)

    def lap(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.timings.append((stage, (now - since) * 1000))
        return now


class Retriever:
    def __init__(
        self,
        db: Database,
        embedder: Embedder | None,
        make_condenser: Callable[[str, str], Condenser],
        make_reranker: Callable[[str | None], Reranker],
        settings: RetrieveSection,
        embedder_unavailable_reason: str = "",
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.make_condenser = make_condenser
        self.make_reranker = make_reranker
        self.settings = settings
        self.embedder_unavailable_reason = embedder_unavailable_reason or "no embedder is configured"

    @property
    def condenser(self) -> Condenser:
        """The condenser of a turn that names no answering model (the evaluation's, a REST retrieve's)."""
        return self.make_condenser("", "")

    async def query_vectors(self, queries: Sequence[str]) -> tuple[list[np.ndarray] | None, str, str]:
        """The query vectors, or None and why the vector arm cannot run; and the model's name."""
        if self.embedder is None:
            return None, self.embedder_unavailable_reason, ""
        embedder = self.embedder
        # Which model the index holds is a round trip to the database, embedding the queries a pass of the model in
        # a worker thread: started together, a call waits for the longer of the two, not for both. The vectors are
        # dropped when the index turns out to hold none, or another model's.
        embedding = asyncio.ensure_future(asyncio.gather(*(embedder.embed_query(query) for query in queries)))
        try:
            async with self.db.pool.acquire() as connection:
                indexed = await current_model(connection)
        except BaseException:
            await _dropped(embedding)
            raise
        if indexed is None:
            await _dropped(embedding)
            return None, "nothing has been embedded yet: sync the vault first", ""
        # A model of the table has its dimension known up front, so another model in the index is told before
        # (and instead of) whatever its embedding did; a model learned from its first vector is checked after.
        ours = _model_record(embedder)
        vectors: list[np.ndarray] = []
        if ours is None or ours == indexed:
            try:
                vectors = list(await embedding)
            except SecondbrainError as error:
                return None, f"the embedder failed: {error}", ""
            ours = _model_record(embedder)
        else:
            await _dropped(embedding)
        if ours is None:
            return None, "the embedder is not ready: its dimension is not known", ""
        if ours != indexed:
            return None, (
                f"the index was built with {indexed.identity} ({indexed.dimension}-d) but this service embeds with "
                f"{ours.identity} ({ours.dimension}-d): sync the vault to re-embed it"
            ), ""  # fmt: skip
        return vectors, "", embedder.identity

    async def _search(
        self, query: str, filters: Filters, vector: np.ndarray | None, lexical: bool, k: int
    ) -> list[Candidate]:
        async with self.db.pool.acquire() as connection:
            return await store.hybrid_candidates(
                connection,
                query,
                k,
                filters,
                vector,
                lexical=lexical,
                fusion=Fusion(self.settings.fusion, self.settings.vector_weight),
                statement_timeout=STATEMENT_TIMEOUT_SECONDS,
            )

    async def retrieve(
        self, query: str, history: Sequence[ChatMessage], filters: Filters, options: RetrievalOptions
    ) -> AsyncIterator[RetrieveEvent]:
        text = validate_query(query, history)
        clock = _Clock()
        ranking = await self.rank(text, history, filters, options, clock=clock)
        since = time.perf_counter()
        passages = await self._expand(ranking.ranked, options, ranking.searched)
        clock.lap("expand", since)

        yield Plan(**_fields(ranking, Decisions), filters=filters, mode=options.mode, max_passages=options.max_passages)
        for passage in passages:
            yield passage
        clock.timings.append(("total", (time.perf_counter() - clock.started) * 1000))
        yield Done(clock.timings, len(passages))

    async def _event_day(self, event: str, filters: Filters, mode: Mode) -> date | None:
        """The day of `event` ("the roofer's inspection") by the notes' best passage about it among those the note
        itself dates (a daily note, front matter, a dated heading; never a file's modification time) and that hold a
        word of it (`time_events.event_day`); None when there is none."""
        if year := _EVENT_YEAR.search(event):
            # "the 2025 abbey dash" is that year's, not the latest one's.
            first, last = date(int(year[0]), 1, 1), date(int(year[0]), 12, 31)
            filters = replace(
                filters,
                date_from=max(filters.date_from, first) if filters.date_from else first,
                date_to=min(filters.date_to, last) if filters.date_to else last,
            )
        vectors = None
        if mode != "lexical":
            vectors, _, _ = await self.query_vectors([event])
        found = await self._search(event, filters, vectors[0] if vectors else None, mode != "vector", EVENT_DEPTH)
        if mode != "vector":
            # The event's own words must be there: by meaning alone, any journal has a passage nearest to "the moon
            # landing", and its day would be taken for the event's.
            found = [candidate for candidate in found if candidate.lexical_rank is not None]
        async with self.db.pool.acquire() as connection:
            dated = await store.chunk_dates(connection, [c.chunk_id for c in found], STATEMENT_TIMEOUT_SECONDS)
            # The best passages about it that the notes date, or that name its day themselves: an undated race report
            # ("Race day, Sunday the 16th of November") says when the race was, as a note of a whole year does.
            ids = [c.chunk_id for c in found if c.chunk_id in dated][:EVENT_PASSAGES]
            contents = await store.chunk_contents(connection, ids, STATEMENT_TIMEOUT_SECONDS) if ids else {}
        for chunk in ids:
            first, last, own = dated[chunk]
            text = body_of(contents.get(chunk, ""))
            if own and (last - first).days < EVENT_SPAN_DAYS:
                return event_day(event, text, first)
            # A file's time or a long span is no day of the event: only a day the passage names for it is, read as
            # the latest such day up to the passage's end.
            named = named_event_day(event, text, read_as_of_latest(last))
            if named is not None and named <= last:
                return named
        return None

    def _now(self) -> datetime:
        """The asker's now when the client sent none: this machine's clock, in the configured time zone if any."""
        zone = ZoneInfo(self.settings.time_zone) if self.settings.time_zone else None
        return datetime.now(zone).astimezone(zone)

    async def rank(
        self,
        text: str,
        history: Sequence[ChatMessage],
        filters: Filters,
        options: RetrievalOptions,
        *,
        depth: int | None = None,
        clock: _Clock | None = None,
    ) -> Ranking:
        """Condense, search each query with the arms `options.mode` asks for (top `depth` chunks per arm, default
        `candidates_per_arm`), fuse, add linked notes and rerank: the chunks in order, before passages are built.
        The evaluation ranks with this too, so what it measures is what a chat turn reads."""
        clock = clock or _Clock()
        since = clock.started
        k = depth or self.settings.candidates_per_arm

        # The time the question names narrows the search, and its words are not searched (see time_scope).
        now = options.now or self._now()
        timed = None
        if self.settings.read_time:
            earlier = [message.content for message in history]
            # A question's time takes well under a millisecond to read; a long question's up to a few tenths of a
            # second (question_time.EDGE_CHARS), so it is read off the event loop and other calls go on meanwhile.
            if len(text) <= EDGE_CHARS:
                timed = time_scope.scope(text, now, filters, earlier)
            else:
                timed = await asyncio.to_thread(time_scope.scope, text, now, filters, earlier)
        if timed is not None and timed.intent.event is not None:
            event = timed.intent.event
            event_days = await asyncio.gather(
                *(
                    self._event_day(what, _told_by(filters, now.date()), options.mode) if what else _no_day()
                    for what in (event.what, event.second)
                )
            )
            timed = time_scope.at_events(timed, (event_days[0], event_days[1]), now, filters)
        searched, asked = filters, text
        if timed is not None:
            searched, text = timed.filters, timed.intent.query or text

        condenser = self.make_condenser(options.answer_provider, options.answer_model)

        async def plan(
            text: str, again: str = ""
        ) -> tuple[Condensed, list[PlannedQuery], list[np.ndarray] | None, str, str]:
            """The queries to search for `text` (condensed with the history), and their vectors; `again` names the
            timing stages of a second plan apart from the first's."""
            nonlocal since
            condensed = await condenser.condense(
                text, history, condense=options.condense, alternates=options.alternates
            )
            queries = condensed.queries or [PlannedQuery(text, "original")]
            since = clock.lap("condense" + again, since)
            vectors: list[np.ndarray] | None = None
            skipped = "the request asked for the lexical arm only" if options.mode == "lexical" else ""
            model = ""
            if options.mode != "lexical":
                vectors, skipped, model = await self.query_vectors([q.text for q in queries])
                since = clock.lap("embed" + again, since)
            if vectors is None and options.mode == "vector":
                raise InvalidInput(f"the vector arm cannot run ({skipped}); ask for hybrid or lexical retrieval")
            return condensed, queries, vectors, skipped, model

        condensed, queries, vectors, skipped, model = await plan(text)

        async def search(within: Filters) -> list[Fused]:
            rankings = await asyncio.gather(
                *(
                    self._search(q.text, within, vectors[i] if vectors else None, options.mode != "vector", k)
                    for i, q in enumerate(queries)
                )
            )
            return fuse_queries(rankings)

        fused = await search(searched)
        since = clock.lap("search", since)
        said_time = ""
        if timed is not None:
            days: dict[int, tuple[date, date, bool]] = {}
            if fused:
                async with self.db.pool.acquire() as connection:
                    days = await store.chunk_dates(
                        connection, [item.candidate.chunk_id for item in fused], STATEMENT_TIMEOUT_SECONDS
                    )
            content_dated = frozenset(chunk for chunk, (_, _, own) in days.items() if own)
            if not content_dated:
                # Nothing dated in or near the range holds the words (the passages no note dates, which the search
                # also reaches, do not count): every note is searched, and the plan says so. A range the notes'
                # events made is searched as asked, the events' words included ("the day after Sintra": the Sintra
                # day's note tells of it too); a range of words ("last week") leaves them out.
                if timed.found_events and asked != text:
                    condensed, queries, vectors, skipped, model = await plan(asked, again=" (as asked)")
                fused, searched = await search(filters), filters
                said_time = f"{timed.describe()}: no note dated then matches, so every note was searched"
            else:
                dates = {chunk: (first, last) for chunk, (first, last, _) in days.items()}
                fused = time_scope.reorder(fused, dates, timed, content_dated)
                said_time = timed.describe()
        ranked = [RankedChunk(item) for item in fused]
        since = clock.lap("fuse", since)

        if self.settings.wikilink_expansion and ranked:
            ranked += await self._linked(ranked, queries[0].text, searched)
            since = clock.lap("links", since)

        reranked, rerank_skipped = False, ""
        if options.rerank and ranked:
            ranked, rerank_skipped = await self._rerank(ranked, queries[0].text, options)
            reranked = not rerank_skipped
            since = clock.lap("rerank", since)

        return Ranking(
            queries=queries,
            ranked=ranked,
            vector_arm_ran=vectors is not None,
            vector_arm_skipped_reason=skipped,
            condense_skipped_reason=condensed.skipped_reason,
            reranked=reranked,
            rerank_skipped_reason=rerank_skipped,
            embedding_model=model,
            time=said_time,
            # Days the asker named, as searched: the request's range or the question's (not "latest", whose cap at
            # the asker's now names no days, nor a range that matched nothing and gave way to every note).
            dated_range=bool(searched.date_from or searched.date_to)
            and not (timed is not None and timed.intent.range is None),
            searched=searched,
        )

    async def _linked(self, ranked: list[RankedChunk], query: str, filters: Filters) -> list[RankedChunk]:
        sources = list(dict.fromkeys(r.fused.candidate.file_id for r in ranked[:LINK_SOURCES]))
        present = {r.fused.candidate.chunk_id for r in ranked}
        async with self.db.pool.acquire() as connection:
            linked = await store.linked_candidates(
                connection, sources, query, filters, statement_timeout=STATEMENT_TIMEOUT_SECONDS
            )
        return [
            RankedChunk(Fused(Candidate(chunk_id, file_id, index, None, None, 0.0), 0.0), via_link=True)
            for chunk_id, file_id, index in linked
            if chunk_id not in present
        ]

    async def _rerank(
        self, ranked: list[RankedChunk], query: str, options: RetrievalOptions
    ) -> tuple[list[RankedChunk], str]:
        """The top candidates reordered by a cross-encoder, or the fused order and why reranking did not happen."""
        top = ranked[: self.settings.reranker.candidates]
        winners = [(r.fused.candidate.file_id, r.fused.candidate.chunk_index) for r in top]
        async with self.db.pool.acquire() as connection:
            rows = await store.chunks_around(connection, winners, 0, statement_timeout=STATEMENT_TIMEOUT_SECONDS)
        texts = {(row.file_id, row.chunk_index): row.content for row in rows}
        documents = [texts.get(key, "") for key in winners]
        try:
            reranker = self.make_reranker(options.rerank_model)
            results = await reranker.rerank(query, documents, top_n=len(documents))
        except SecondbrainError as error:
            return ranked, f"reranking failed, so the fused order is kept: {error}"
        reordered = [RankedChunk(top[r.index].fused, top[r.index].via_link, r.score) for r in results]
        seen = {r.index for r in results}
        reordered += [item for i, item in enumerate(top) if i not in seen]
        return reordered + ranked[len(top) :], ""

    async def _expand(self, ranked: list[RankedChunk], options: RetrievalOptions, filters: Filters) -> list[Passage]:
        # Enough winners to fill the passages even when some merge into one span.
        winners = ranked[: options.max_passages * 3]
        keys = [(r.fused.candidate.file_id, r.fused.candidate.chunk_index) for r in winners]
        radius = 1 if options.expand_neighbours else 0
        async with self.db.pool.acquire() as connection:
            # A neighbour dated outside the asked range is another day's entry, not context: it is left out.
            rows = await store.chunks_around(
                connection, keys, radius, statement_timeout=STATEMENT_TIMEOUT_SECONDS, dated=filters
            )
        available = {(row.file_id, row.chunk_index): row for row in rows}
        spans = plan_spans(keys, available, radius, self.settings.max_chunks_per_note)
        texts = within_budget([assemble(span, available) for span in spans], options.token_budget, options.max_passages)
        return [_passage(number, text, winners[text.best_rank]) for number, text in enumerate(texts, start=1)]


def _passage(number: int, text: PassageText, ranked: RankedChunk) -> Passage:
    candidate = ranked.fused.candidate
    return Passage(
        **_fields(text, Excerpt),
        number=number,
        score=ranked.rerank_score if ranked.rerank_score is not None else ranked.fused.score,
        lexical_rank=candidate.lexical_rank,
        vector_rank=candidate.vector_rank,
        fused_score=ranked.fused.score,
        rerank_score=ranked.rerank_score,
        via_link=ranked.via_link,
    )


def _fields(record: object, of: type) -> dict[str, Any]:
    """The fields of `record` that the dataclass `of` declares, to carry them into a record of another class."""
    return {declared.name: getattr(record, declared.name) for declared in fields(of)}


def _model_record(embedder: Embedder) -> ModelRecord | None:
    """The model `embedder` embeds with, as the index records it; None while its dimension is not known."""
    try:
        return ModelRecord(embedder.provider, embedder.model, embedder.dimension)
    except SecondbrainError:
        return None


async def _dropped(work: asyncio.Future[Any]) -> None:
    """Cancel `work` and wait for it to end: its result is not wanted. (Waited for with `asyncio.wait`, which
    raises nothing of its own, so a cancellation of this caller still propagates.)"""
    work.cancel()
    await asyncio.wait([work])
    if not work.cancelled():
        work.exception()  # retrieved, so asyncio does not report it as never retrieved
