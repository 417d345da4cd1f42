"""The note tools, defined once: name, a description written for a model, the JSON schema of the arguments (from a
pydantic model, which also checks them) and a handler calling our gRPC services.

Two callers share them: the MCP server (`call_tool`: a tool's text) and the chat service's agent mode (`find`: what
a tool found as data, whose passages the turn numbers in its own sequence before the model reads them). Neither
sees an exception: bad arguments, a note the index does not hold or a service that is down are a `ToolFailure` (an
error result, for MCP), in the sentences our API gives, so the model can correct itself.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Annotated, Any, Literal

import grpc
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from secondbrain.chat.v1 import chat_service_pb2 as chat_pb
from secondbrain.chat.v1 import chat_service_pb2_grpc as chat_grpc
from secondbrain.note_tools import formatting
from secondbrain.note_tools.answer_stream import AnswerStream
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.v1 import retrieval_pb2 as common
from secondbrain.wording import counted

log = logging.getLogger(__name__)

# How long one tool may wait on a service; `ask` streams a whole answer, so it gets longer.
CALL_TIMEOUT_SECONDS = 30.0
ASK_TIMEOUT_SECONDS = 300.0

# The largest value of a proto int32 field, where every integer argument ends up: protobuf refuses a larger one with
# a ValueError while the request is built, so each such argument is bounded here, where a model is told the bound.
INT32_MAX = 2**31 - 1

SEARCH_MODES = {"hybrid": pb.SEARCH_MODE_HYBRID, "lexical": pb.SEARCH_MODE_KEYWORD, "vector": pb.SEARCH_MODE_SEMANTIC}


@dataclass(frozen=True)
class NoteServices:
    """The services the tools call, on channels that carry the API token: retrieval always, chat for `ask` (None:
    `ask` says it is not available)."""

    retrieve: pb_grpc.RetrieveServiceStub
    chat: chat_grpc.ChatServiceStub | None = None


@dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool = False


Passages = Sequence[common.Passage]


@dataclass(frozen=True)
class Found:
    """What a tool found. `passages` are what it quotes and a reader may cite; `render` and `summary` say it, given
    those passages as the reader numbers them (an agent turn renumbers them into its own sequence, and may keep
    fewer, or fewer lines, to fit the model's context)."""

    render: Callable[[Passages], str]
    summary: Callable[[Passages], str]
    passages: tuple[common.Passage, ...] = field(default=())

    def text(self) -> str:
        return self.render(self.passages)


class ToolFailure(Exception):
    """A call the model should be told failed, and why (as it is: the sentence is written for it)."""


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Filtered(_Arguments):
    folder: str | None = Field(default=None, description="Only notes under this vault folder, e.g. 'Projects'.")
    tag: str | None = Field(default=None, description="Only notes with this tag (without '#') or a child of it.")
    since: date | None = Field(
        default=None,
        description="Only what is dated on or after this day (YYYY-MM-DD): a daily note's day, a note's front "
        "matter date, a running log's dated heading. Use it when the question names a time.",
    )
    until: date | None = Field(default=None, description="Only what is dated on or before this day (YYYY-MM-DD).")

    def filters(self) -> common.RetrievalFilters:
        return common.RetrievalFilters(
            folders=[self.folder] if self.folder else [],
            tags=[self.tag.lstrip("#")] if self.tag else [],
            date_from=self.since.isoformat() if self.since else "",
            date_to=self.until.isoformat() if self.until else "",
        )


class SearchNotes(_Filtered):
    query: str = Field(description="Words or a question to find notes by.")
    mode: Literal["hybrid", "lexical", "vector"] = Field(
        default="hybrid", description="lexical: every word must match; vector: by meaning; hybrid: both."
    )
    limit: int = Field(default=10, ge=1, le=50, description="The most notes to return.")


class RetrievePassages(_Filtered):
    question: str = Field(description="The question the passages should answer, standing on its own.")
    passages: int = Field(default=8, ge=1, le=20, description="How many passages to return.")


# A line number of GetNoteRequest (int32); 0 means the note's start or end.
LineNumber = Annotated[int, Field(ge=0, le=INT32_MAX)]


class ReadNote(_Arguments):
    path: str = Field(description="The note's vault-relative path, as search results and passages give it.")
    start_line: LineNumber = Field(
        default=0, description="The first line to read (e.g. a passage's start line); 0: the start."
    )
    end_line: LineNumber = Field(default=0, description="The last line to read, inclusive; 0: the end of the note.")
    page: Annotated[int, Field(ge=0, le=INT32_MAX)] = Field(
        default=0,
        description="For a PDF (or a presentation's slide), the page to read, as passages give it ('page 12'); "
        "0: by lines. Takes the place of start_line and end_line.",
    )


class ListNotes(_Filtered):
    limit: int = Field(default=100, ge=1, le=1000, description="The most notes to list.")
    order: Literal["path", "newest"] = Field(
        default="path", description="path: by path; newest: newest first, by the note's date (e.g. a journal)."
    )


class NoteLinks(_Arguments):
    path: str = Field(description="The note's vault-relative path.")


class RelatedNotes(_Arguments):
    path: str = Field(description="The note's vault-relative path, as search results and passages give it.")
    limit: int = Field(default=10, ge=1, le=50, description="The most related notes to return.")


class Ask(_Arguments):
    question: str = Field(description="A question about the notes, standing on its own.")


async def _check_filters_name_notes(services: NoteServices, args: _Filtered) -> None:
    """When a filtered call found nothing: a ToolFailure if the folder or tag itself holds no note (a typo, a folder
    that does not exist), which "nothing answers" would hide."""
    if not (args.folder or args.tag):
        return
    # The folder and tag alone: a folder with no note dated in the range still exists.
    asked = args.filters()
    where_only = common.RetrievalFilters(folders=asked.folders, tags=asked.tags)
    listed = await services.retrieve.ListNotes(
        pb.ListNotesRequest(filters=where_only, limit=1), timeout=CALL_TIMEOUT_SECONDS
    )
    if listed.total:
        return
    where = " and ".join(
        part
        for part in (f"in the folder {args.folder!r}" if args.folder else "", f"tagged #{args.tag}" if args.tag else "")
        if part
    )
    raise ToolFailure(f"no note is {where}: check the name (list_notes without filters shows the notes and folders)")


async def _search_notes(services: NoteServices, args: SearchNotes) -> Found:
    request = pb.SearchRequest(query=args.query, mode=SEARCH_MODES[args.mode], filters=args.filters(), limit=args.limit)
    response = await services.retrieve.Search(request, timeout=CALL_TIMEOUT_SECONDS)
    if not response.hits:
        await _check_filters_name_notes(services, args)
    return Found(
        render=lambda _: formatting.search_results(response, args.query),
        summary=lambda _: f"Searched {args.query!r}: {counted(len(response.hits), 'note')}",
    )


# A passage the search found with under this share of the best passage's evidence is filler to an assistant: on a small
# vault every question brought back all its notes. Chosen on our own question sets (docs/benchmarks.md): at 0.3 no
# expected note was dropped on any of them, and the demo vault's questions got 3.3 passages instead of 7.8.
FILLER_SHARE = 0.3


def without_filler(passages: list[common.Passage]) -> list[common.Passage]:
    """`passages` without those found with under FILLER_SHARE of the best one's fused score. Passages joined as
    linked notes stay, and so does everything when a reranker ordered them (its scores are not shares)."""
    searched = [passage for passage in passages if not passage.via_link]
    if not searched or any(passage.HasField("rerank_score") for passage in searched):
        return passages
    floor = FILLER_SHARE * searched[0].fused_score
    return [passage for passage in passages if passage.via_link or passage.fused_score >= floor]


async def _retrieve_passages(services: NoteServices, args: RetrievePassages) -> Found:
    # The question stands on its own: no conversation to condense it against.
    options = pb.RetrieveOptions(max_passages=args.passages, condense=False)
    request = pb.RetrieveRequest(query=args.question, filters=args.filters(), options=options)
    call = services.retrieve.Retrieve(request, timeout=CALL_TIMEOUT_SECONDS)
    found = without_filler([event.passage async for event in call if event.HasField("passage")])
    if not found:
        await _check_filters_name_notes(services, args)
    return Found(
        render=lambda passages: formatting.passages(passages, args.question),
        summary=lambda passages: f"Retrieved {counted(len(passages), 'passage')} for {args.question!r}",
        passages=tuple(found),
    )


async def _read_note(services: NoteServices, args: ReadNote) -> Found:
    start_line, end_line = args.start_line, args.end_line
    if args.page:
        start_line, end_line = await _lines_of_page(services, args.path, args.page)
    request = pb.GetNoteRequest(path=args.path, start_line=start_line, end_line=end_line)
    response = await services.retrieve.GetNote(request, timeout=CALL_TIMEOUT_SECONDS)
    read = common.Passage(
        note_path=response.path,
        note_title=response.title,
        start_line=response.start_line,
        end_line=response.end_line,
        text=response.text,
    )

    def summary(passages: Passages) -> str:
        if not passages:
            return f"Read nothing of {response.path}"
        return f"Read {response.path} lines {passages[0].start_line}-{passages[0].end_line}"

    return Found(
        render=lambda passages: formatting.note(response, passages[0] if passages else None),
        summary=summary,
        passages=(read,),
    )


# The heading the index gives each page of a PDF ("## Page 12") and each slide ("## Slide 3: Results").
_PAGE_HEADING = re.compile(r"^## (?:Page|Slide) (\d+)(?::.*)?$")


async def _lines_of_page(services: NoteServices, path: str, page: int) -> tuple[int, int]:
    """The lines of `page` in the text the index made of the attachment at `path` (a heading per page)."""
    whole = await services.retrieve.GetNote(pb.GetNoteRequest(path=path), timeout=CALL_TIMEOUT_SECONDS)
    starts: dict[int, int] = {}
    for offset, line in enumerate(whole.text.split("\n")):
        if found := _PAGE_HEADING.match(line):
            starts.setdefault(int(found.group(1)), whole.start_line + offset)
    if page not in starts:
        if not starts:
            raise ToolFailure(f"{whole.path} has no pages: read it by lines (it is a note, or a file without pages)")
        raise ToolFailure(
            f"{whole.path} has no page {page} with text: its pages with text run from {min(starts)} to "
            f"{max(starts)} ({counted(len(starts), 'page')})"
        )
    later = [line for number, line in starts.items() if line > starts[page]]
    return starts[page], (min(later) - 1 if later else 0)


async def _list_notes(services: NoteServices, args: ListNotes) -> Found:
    order = pb.LIST_ORDER_NEWEST if args.order == "newest" else pb.LIST_ORDER_PATH
    request = pb.ListNotesRequest(filters=args.filters(), limit=args.limit, order=order)
    response = await services.retrieve.ListNotes(request, timeout=CALL_TIMEOUT_SECONDS)
    return Found(
        render=lambda _: formatting.note_list(response, newest_first=args.order == "newest"),
        summary=lambda _: f"Listed {len(response.notes)} of {counted(response.total, 'note')}",
    )


async def _note_links(services: NoteServices, args: NoteLinks) -> Found:
    request = pb.GetNoteLinksRequest(path=args.path)
    response = await services.retrieve.GetNoteLinks(request, timeout=CALL_TIMEOUT_SECONDS)
    return Found(
        render=lambda _: formatting.links(response),
        summary=lambda _: (
            f"Links of {response.path}: {len(response.outgoing)} out, {counted(len(response.backlinks), 'backlink')}"
        ),
    )


async def _related_notes(services: NoteServices, args: RelatedNotes) -> Found:
    request = pb.GetRelatedNotesRequest(path=args.path, limit=args.limit)
    response = await services.retrieve.GetRelatedNotes(request, timeout=CALL_TIMEOUT_SECONDS)
    return Found(
        render=lambda _: formatting.related(response),
        summary=lambda _: f"Related to {response.path}: {counted(len(response.notes), 'note')}",
    )


async def _ask(services: NoteServices, args: Ask) -> Found:
    """A cited answer from the chat service's configured provider, by ChatService.Answer: a turn that stores
    nothing, so asking through a tool leaves nothing behind."""
    if services.chat is None:
        raise ToolFailure("ask is not available here: no chat service is connected")
    stream = AnswerStream()
    request = chat_pb.AnswerRequest(content=args.question)
    async for event in services.chat.Answer(request, timeout=ASK_TIMEOUT_SECONDS):
        if (error := stream.take(event)) is not None:
            raise ToolFailure(error.message)
    answer = formatting.answer(*stream.cited())
    return Found(render=lambda _: answer, summary=lambda _: f"Asked {args.question!r}")


@dataclass(frozen=True)
class NoteTool:
    name: str
    description: str
    arguments: type[_Arguments]
    handler: Callable[[NoteServices, Any], Awaitable[Found]]

    @property
    def input_schema(self) -> dict[str, Any]:
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        for argument in schema.get("properties", {}).values():
            argument.pop("title", None)
        return schema


NOTE_TOOLS: dict[str, NoteTool] = {
    tool.name: tool
    for tool in (
        NoteTool(
            "search_notes",
            "Find notes in the user's vault by words or meaning. Returns note paths with titles, tags and a snippet "
            "around the best match, best first. Use it to find which notes are about something.",
            SearchNotes,
            _search_notes,
        ),
        NoteTool(
            "retrieve_passages",
            "Get numbered passages from the user's notes that answer a question, each with its note path, heading "
            "and line range (passages far weaker than the best are left out). Use it to answer from the notes; cite "
            "passages by their number and path.",
            RetrievePassages,
            _retrieve_passages,
        ),
        NoteTool(
            "read_note",
            "Read a note's text, whole or a range of its lines (line numbers as passages give them), or a page of a "
            "PDF the vault holds (its text, page by page). Use it to read more around a passage or a whole note a "
            "search found.",
            ReadNote,
            _read_note,
        ),
        NoteTool(
            "list_notes",
            "List the notes in the vault by path, optionally only under a folder or with a tag.",
            ListNotes,
            _list_notes,
        ),
        NoteTool(
            "note_links",
            "Show a note's [[wikilinks]] (which notes it links to) and its backlinks (which notes link to it).",
            NoteLinks,
            _note_links,
        ),
        NoteTool(
            "related_notes",
            "Find the notes related to one note: near it in meaning, linked with it either way, or sharing its links "
            "or tags, most related first, each with why (and the section nearest in meaning, with its lines). Use it "
            "to gather what else the vault says about a note's subject.",
            RelatedNotes,
            _related_notes,
        ),
        NoteTool(
            "ask",
            "Ask secondbrain itself: a cited answer written from the notes by its configured model (or quoted "
            "from the notes when none is configured).",
            Ask,
            _ask,
        ),
    )
}


# The tools an agent turn offers its model: `ask` would have the chat service ask itself. `related_notes` is not
# offered yet: agent mode's prompt and tests name its tools, and are the chat service's to extend.
AGENT_TOOLS = tuple(tool for name, tool in NOTE_TOOLS.items() if name not in ("ask", "related_notes"))


async def find(services: NoteServices, name: str, arguments: dict[str, Any] | None) -> Found:
    """Run the tool `name` with `arguments`; raises ToolFailure, and nothing else, when it cannot."""
    tool = NOTE_TOOLS.get(name)
    if tool is None:
        raise ToolFailure(f"there is no tool {name!r}; the tools are {', '.join(NOTE_TOOLS)}")
    try:
        args = tool.arguments.model_validate(arguments or {})
    except ValidationError as error:
        raise ToolFailure(f"{name}: {_problems(error)}") from None
    try:
        return await tool.handler(services, args)
    except grpc.aio.AioRpcError as error:
        raise ToolFailure(_rpc_problem(error)) from None
    except ToolFailure:
        raise
    except Exception:
        log.exception("the note tool %s failed", name)
        raise ToolFailure(f"{name} failed unexpectedly; the server's log says why") from None


async def call_tool(services: NoteServices, name: str, arguments: dict[str, Any] | None) -> ToolResult:
    """Run the tool `name` with `arguments`: its text, or the failure as an error result."""
    try:
        return ToolResult((await find(services, name, arguments)).text())
    except ToolFailure as failure:
        return ToolResult(str(failure), is_error=True)


def _problems(error: ValidationError) -> str:
    """One sentence per problem, naming the argument: what a model can correct."""
    problems = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "the arguments"
        message = "is required" if problem["type"] == "missing" else problem["msg"].lower()
        if problem["type"] == "extra_forbidden":
            message = "is not an argument of this tool"
        problems.append(f"{where} {message}")
    return "; ".join(problems)


def _rpc_problem(error: grpc.aio.AioRpcError) -> str:
    if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return f"the notes service did not answer ({error.details() or error.code().name}); try again shortly"
    return error.details() or error.code().name
