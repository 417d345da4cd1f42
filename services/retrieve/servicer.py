"""RetrieveService over gRPC: proto <-> domain only. Errors are mapped by secondbrain.service.error_mapping."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from secondbrain.errors import InvalidInput
from secondbrain.retrieve import note_reading, related
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.modes import Mode
from secondbrain.retrieve.note_search import search_notes, validate
from secondbrain.retrieve.pipeline import Retriever
from secondbrain.retrieve.retrieval import Done, Passage, Plan, RetrievalOptions, RetrieveEvent
from secondbrain.retrieve.store import StoredLink
from secondbrain.retrieve.suggestions import Suggester
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.history import history_from
from secondbrain.service.observe import RETRIEVE_STAGE
from secondbrain.v1 import retrieval_pb2 as common

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["RetrieveService"].full_name

MODES: dict[common.RetrievalMode.ValueType, Mode] = {
    common.RETRIEVAL_MODE_UNSPECIFIED: "hybrid",
    common.RETRIEVAL_MODE_HYBRID: "hybrid",
    common.RETRIEVAL_MODE_LEXICAL: "lexical",
    common.RETRIEVAL_MODE_VECTOR: "vector",
}
MODE_VALUES = {"hybrid": common.RETRIEVAL_MODE_HYBRID, "lexical": common.RETRIEVAL_MODE_LEXICAL,
               "vector": common.RETRIEVAL_MODE_VECTOR}  # fmt: skip
KINDS = {"original": common.QUERY_KIND_ORIGINAL, "condensed": common.QUERY_KIND_CONDENSED,
         "alternate": common.QUERY_KIND_ALTERNATE, "with_history": common.QUERY_KIND_WITH_HISTORY}  # fmt: skip
# Where the proto's words meet ours. The Search RPC keeps its enum's names (renaming them would break clients):
# SEARCH_MODE_KEYWORD is the lexical arm, SEARCH_MODE_SEMANTIC the vector arm (secondbrain.retrieve.modes).
SEARCH_MODES: dict[pb.SearchMode.ValueType, Mode] = {
    pb.SEARCH_MODE_UNSPECIFIED: "hybrid",
    pb.SEARCH_MODE_HYBRID: "hybrid",
    pb.SEARCH_MODE_KEYWORD: "lexical",
    pb.SEARCH_MODE_SEMANTIC: "vector",
}
# ListNotes' orders, in the store's words (secondbrain.retrieve.store.note_reads.ORDERS).
LIST_ORDERS: dict[pb.ListOrder.ValueType, str] = {
    pb.LIST_ORDER_UNSPECIFIED: "path",
    pb.LIST_ORDER_PATH: "path",
    pb.LIST_ORDER_NEWEST: "newest",
    pb.LIST_ORDER_OWN_DATE: "own date",
}


def filters_from(message: common.RetrievalFilters) -> Filters:
    return Filters.parse(
        list(message.folders),
        list(message.tags),
        message.date_from,
        message.date_to,
        list(message.notes),
        list(message.file_types),
    )


def options_from(request: pb.RetrieveRequest, retriever: Retriever) -> RetrievalOptions:
    given = request.options
    if given.mode not in MODES:
        raise InvalidInput(f"unknown retrieval mode {given.mode}")

    def optional(name: str) -> bool | None:
        return getattr(given, name) if given.HasField(name) else None

    return RetrievalOptions.resolve(
        retriever.settings,
        max_passages=given.max_passages,
        mode=MODES[given.mode],
        condense=optional("condense"),
        alternates=optional("alternates"),
        rerank=optional("rerank"),
        rerank_model=given.rerank_model,
        expand_neighbours=optional("expand_neighbours"),
        token_budget=given.token_budget,
        answer_provider=given.answer_provider,
        answer_model=given.answer_model,
        now=request.now,
    )


def retrieve_event(event: RetrieveEvent) -> pb.RetrieveResponse:
    """One pipeline event as the proto's stream event (also what the chat service stores)."""
    if isinstance(event, Plan):
        return pb.RetrieveResponse(plan=plan_message(event))
    if isinstance(event, Passage):
        return pb.RetrieveResponse(passage=passage_message(event))
    return pb.RetrieveResponse(done=done_message(event))


def plan_message(plan: Plan) -> common.RetrievalPlan:
    return common.RetrievalPlan(
        queries=[common.PlannedQuery(text=q.text, kind=KINDS[q.kind]) for q in plan.queries],
        filters=common.RetrievalFilters(
            folders=list(plan.filters.folders),
            tags=list(plan.filters.tags),
            date_from=plan.filters.date_from.isoformat() if plan.filters.date_from else "",
            date_to=plan.filters.date_to.isoformat() if plan.filters.date_to else "",
            notes=list(plan.filters.notes),
            file_types=list(plan.filters.file_types),
        ),
        mode=MODE_VALUES[plan.mode],
        vector_arm_ran=plan.vector_arm_ran,
        vector_arm_skipped_reason=plan.vector_arm_skipped_reason,
        condense_skipped_reason=plan.condense_skipped_reason,
        reranked=plan.reranked,
        rerank_skipped_reason=plan.rerank_skipped_reason,
        embedding_model=plan.embedding_model,
        max_passages=plan.max_passages,
        time=plan.time,
        dated_range=plan.dated_range,
    )


def passage_message(passage: Passage) -> common.Passage:
    message = common.Passage(
        number=passage.number,
        note_path=passage.path,
        note_title=passage.title,
        heading_path=passage.heading_path,
        start_line=passage.start_line,
        end_line=passage.end_line,
        text=passage.text,
        score=passage.score,
        chunk_indexes=passage.chunk_indexes,
        lexical_rank=passage.lexical_rank or 0,
        vector_rank=passage.vector_rank or 0,
        fused_score=passage.fused_score,
        via_link=passage.via_link,
        date=passage.date,
        date_source=passage.date_source,
        page_start=passage.page_start or 0,
        page_end=passage.page_end or 0,
    )
    if passage.rerank_score is not None:
        message.rerank_score = passage.rerank_score
    return message


def done_message(done: Done) -> pb.RetrieveDone:
    for stage, milliseconds in done.timings:
        RETRIEVE_STAGE.labels(stage).observe(milliseconds / 1000)
    return pb.RetrieveDone(
        timings=[common.StageTiming(stage=stage, milliseconds=ms) for stage, ms in done.timings],
        passage_count=done.passage_count,
    )


class RetrieveServicer(pb_grpc.RetrieveServiceServicer):
    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self.suggester = Suggester(retriever)

    async def Retrieve(
        self, request: pb.RetrieveRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.RetrieveResponse]:
        options = options_from(request, self.retriever)
        filters = filters_from(request.filters)
        history = history_from(request.history)
        async for event in self.retriever.retrieve(request.query, history, filters, options):
            yield retrieve_event(event)

    async def Search(self, request: pb.SearchRequest, context: grpc.aio.ServicerContext) -> pb.SearchResponse:
        if request.mode not in SEARCH_MODES:
            raise InvalidInput(f"unknown search mode {request.mode}")
        mode = SEARCH_MODES[request.mode]
        limit = request.limit or 20
        filters = filters_from(request.filters)
        # Validate before embedding: an empty or huge query is refused without spending an embedding on it.
        text = validate(request.query, mode, limit)
        vector, skipped = None, ""
        if mode != "lexical":
            vectors, skipped, _ = await self.retriever.query_vectors([text])
            vector = vectors[0] if vectors else None
        # The client's deadline bounds the SQL too.
        remaining = context.time_remaining()
        result = await search_notes(
            self.retriever.db.pool,
            request.query,
            mode,
            filters,
            limit,
            vector,
            skipped,
            timeout_seconds=min(remaining, 10.0) if remaining else 10.0,
        )
        return pb.SearchResponse(
            hits=[
                pb.NoteHit(
                    path=hit.path,
                    title=hit.title,
                    score=hit.score,
                    snippet=hit.snippet,
                    tags=hit.tags,
                    heading_path=hit.heading_path,
                    contains_query=hit.contains,
                    highlights=[pb.TextRange(start=start, end=end) for start, end in hit.highlights],
                    date=hit.date,
                    date_source=hit.date_source,
                    section_date=hit.section_date,
                    section_date_source=hit.section_date_source,
                )
                for hit in result.hits
            ],
            vector_arm_ran=result.vector_arm_ran,
            vector_arm_skipped_reason=result.vector_arm_skipped_reason,
            timings=[common.StageTiming(stage=stage, milliseconds=ms) for stage, ms in result.timings],
        )

    async def GetNote(self, request: pb.GetNoteRequest, context: grpc.aio.ServicerContext) -> pb.GetNoteResponse:
        note = await note_reading.read_note(self.retriever.db.pool, request.path, request.start_line, request.end_line)
        return pb.GetNoteResponse(
            path=note.path,
            title=note.title,
            text=note.text,
            start_line=note.start_line,
            end_line=note.end_line,
            last_line=note.last_line,
            tags=note.tags,
            aliases=note.aliases,
            lines_known=note.lines_known,
            properties_json=note.properties_json,
            date=note.date,
            date_source=note.date_source,
        )

    async def ListNotes(self, request: pb.ListNotesRequest, context: grpc.aio.ServicerContext) -> pb.ListNotesResponse:
        order = LIST_ORDERS.get(request.order)
        if order is None:
            raise InvalidInput(f"unknown list order {request.order}")
        listed = await note_reading.list_notes(
            self.retriever.db.pool, filters_from(request.filters), request.limit, order
        )
        return pb.ListNotesResponse(
            notes=[
                pb.NoteSummary(
                    path=note.path,
                    title=note.title,
                    tags=note.tags,
                    last_line=note.last_line,
                    date=note.date,
                    date_source=note.date_source,
                )
                for note in listed.notes
            ],
            total=listed.total,
        )

    async def GetNoteLinks(
        self, request: pb.GetNoteLinksRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetNoteLinksResponse:
        links = await note_reading.note_links(self.retriever.db.pool, request.path)
        return pb.GetNoteLinksResponse(
            path=links.path,
            outgoing=[_link_message(link) for link in links.outgoing],
            backlinks=[_link_message(link) for link in links.backlinks],
        )

    async def GetFacets(self, request: pb.GetFacetsRequest, context: grpc.aio.ServicerContext) -> pb.GetFacetsResponse:
        found = await note_reading.facets(self.retriever.db.pool, filters_from(request.filters))
        return pb.GetFacetsResponse(
            folders=[pb.FacetCount(value=value, count=count) for value, count in found.folders],
            tags=[pb.FacetCount(value=value, count=count) for value, count in found.tags],
            days=[pb.FacetCount(value=value, count=count) for value, count in found.days],
            notes=found.notes,
            undated_notes=found.undated_notes,
            file_types=[pb.FacetCount(value=value, count=count) for value, count in found.file_types],
        )

    async def GetRelatedNotes(
        self, request: pb.GetRelatedNotesRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetRelatedNotesResponse:
        found = await related.related_notes(self.retriever.db.pool, request.path, request.limit)
        return pb.GetRelatedNotesResponse(
            path=found.path,
            notes=[
                pb.RelatedNote(
                    path=note.path,
                    title=note.title,
                    score=note.score,
                    similarity=note.similarity,
                    heading_path=note.heading_path,
                    start_line=note.start_line,
                    end_line=note.end_line,
                    shared_tags=note.shared_tags,
                    shared_links=note.shared_links,
                    linked_from_note=note.linked_from_note,
                    links_to_note=note.links_to_note,
                    reason=note.reason,
                )
                for note in found.notes
            ],
            meaning_skipped_reason=found.meaning_skipped_reason,
        )

    async def SuggestQuestions(
        self, request: pb.SuggestQuestionsRequest, context: grpc.aio.ServicerContext
    ) -> pb.SuggestQuestionsResponse:
        questions = await self.suggester.suggest(request.limit)
        return pb.SuggestQuestionsResponse(
            questions=[pb.SuggestedQuestion(text=q.text, note_path=q.note_path) for q in questions]
        )


def _link_message(link: StoredLink) -> pb.NoteLink:
    return pb.NoteLink(
        path=link.path or "", target=link.target, heading=link.heading, line=link.line, is_embed=link.is_embed
    )
