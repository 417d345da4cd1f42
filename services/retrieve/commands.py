"""`secondbrain search` and `secondbrain retrieve`: the retrieve service's API from a terminal.

Like ingest's commands, they use a running retrieve service when one answers and start one in this process
otherwise (`secondbrain.service.access`).
"""

from __future__ import annotations

import contextlib
import json
from datetime import datetime

from google.protobuf.json_format import MessageToDict
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from secondbrain.cli.terminal import hanging, markdown, snippet_text, stdout_console
from secondbrain.config import Config
from secondbrain.date_sources import said
from secondbrain.note_tools.formatting import located
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.access import connect, streaming
from secondbrain.v1 import retrieval_pb2 as common
from secondbrain.wording import counted

# The CLI's words for the arms as the Search RPC's names for them (the mapping: the servicer's SEARCH_MODES).
SEARCH_MODES = {"hybrid": pb.SEARCH_MODE_HYBRID, "lexical": pb.SEARCH_MODE_KEYWORD, "vector": pb.SEARCH_MODE_SEMANTIC}
RETRIEVAL_MODES = {
    "hybrid": common.RETRIEVAL_MODE_HYBRID,
    "lexical": common.RETRIEVAL_MODE_LEXICAL,
    "vector": common.RETRIEVAL_MODE_VECTOR,
}


def retrieve_service(
    config: Config, address: str | None, console: Console
) -> contextlib.AbstractAsyncContextManager[pb_grpc.RetrieveServiceStub]:
    return connect(config, "retrieve", address, pb_grpc.RetrieveServiceStub, console)


def _filters(
    folders: list[str], tags: list[str], since: str = "", until: str = "", file_types: list[str] | None = None
) -> common.RetrievalFilters:
    return common.RetrievalFilters(
        folders=folders, tags=tags, date_from=since, date_to=until, file_types=file_types or []
    )


async def run_search(
    config: Config, query: str, *, mode: str, folders: list[str], tags: list[str], since: str = "", until: str = "",
    limit: int, address: str | None, as_json: bool, file_types: list[str] | None = None,
) -> None:  # fmt: skip
    console = stdout_console()
    filters = _filters(folders, tags, since, until, file_types)
    request = pb.SearchRequest(query=query, mode=SEARCH_MODES[mode], filters=filters, limit=limit)
    async with retrieve_service(config, address, Console(stderr=True)) as retrieve:
        response = await retrieve.Search(request, timeout=60)
    if as_json:
        print(json.dumps(MessageToDict(response, preserving_proto_field_name=True), indent=2))
        return
    if not response.vector_arm_ran and response.vector_arm_skipped_reason:
        console.print(f"[yellow]Vector search skipped: {escape(response.vector_arm_skipped_reason)}[/yellow]")
    if not response.hits:
        console.print("No notes match.")
    elif not any(hit.contains_query for hit in response.hits):
        console.print(f"No note contains {escape(repr(query))}; these are related by meaning:")
    for rank, hit in enumerate(response.hits, start=1):
        line = Text.assemble((hit.title, "bold"), "  ", (hit.path, "dim"))
        if hit.tags:
            line.append("  " + " ".join(f"#{tag}" for tag in hit.tags))
        if not hit.contains_query:
            line.append("  (related by meaning)", "dim")
        if dated := said(hit.date, hit.date_source):
            line.append(f"  {dated}", "dim")
        # The matched words in the terminal's own emphasis, at the ranges the API gives (the snippet's own `**` is
        # the note's markdown, rendered at a terminal). Wrapped, or several lines (a table row under its header),
        # the snippet stays under the note's title.
        ranges = [(highlight.start, highlight.end) for highlight in hit.highlights]
        snippet = [snippet_text(console, hit.snippet, ranges, "bold yellow")] if hit.snippet else []
        console.print(hanging(console, f"{rank}.", line, *snippet))


async def run_retrieve(
    config: Config, question: str, *, mode: str, folders: list[str], tags: list[str], since: str = "",
    until: str = "", now: str = "", passages: int, condense: bool, rerank: bool | None, address: str | None,
    as_json: bool, file_types: list[str] | None = None,
) -> None:  # fmt: skip
    console = stdout_console()
    options = pb.RetrieveOptions(max_passages=passages, mode=RETRIEVAL_MODES[mode], condense=condense)
    if rerank is not None:
        options.rerank = rerank
    # The terminal's own clock and zone unless told a moment: "yesterday" in the question is the asker's yesterday.
    now = now or datetime.now().astimezone().isoformat(timespec="seconds")
    request = pb.RetrieveRequest(
        query=question, filters=_filters(folders, tags, since, until, file_types), options=options, now=now
    )
    async with (
        retrieve_service(config, address, Console(stderr=True)) as retrieve,
        streaming(retrieve.Retrieve(request, timeout=120)) as stream,
    ):
        events = [event async for event in stream]
    plan = next(e.plan for e in events if e.WhichOneof("event") == "plan")
    found = [e.passage for e in events if e.WhichOneof("event") == "passage"]
    done = next(e.done for e in events if e.WhichOneof("event") == "done")
    if as_json:
        print(json.dumps({
            "plan": MessageToDict(plan, preserving_proto_field_name=True),
            "notes": list(dict.fromkeys(p.note_path for p in found)),
            "passages": [MessageToDict(p, preserving_proto_field_name=True) for p in found],
            "timings": {t.stage: round(t.milliseconds, 1) for t in done.timings},
        }, indent=2))  # fmt: skip
        return
    queries = " | ".join(q.text for q in plan.queries)
    console.print(f"[dim]Searched for: {escape(queries)}[/dim]")
    if plan.time:
        console.print(f"[dim]{escape(plan.time)}[/dim]")
    for reason, label in ((plan.condense_skipped_reason, "as typed"), (plan.vector_arm_skipped_reason, "no vectors"),
                          (plan.rerank_skipped_reason, "not reranked")):  # fmt: skip
        if reason:
            console.print(f"[dim]{label}: {escape(reason)}[/dim]")
    if not found:
        console.print("No passages found.")
    for passage in found:
        where = " > ".join([passage.note_title, *passage.heading_path])
        lines = located(passage)
        console.print()
        console.print(hanging(console, f"[{passage.number}]", Text.assemble((where, "bold"), "  ", (lines, "dim"))))
        console.print(markdown(console, passage.text.strip()))
    total = next((t.milliseconds for t in done.timings if t.stage == "total"), 0.0)
    console.print(f"\n[dim]{counted(len(found), 'passage')} in {total:.0f} ms[/dim]")
