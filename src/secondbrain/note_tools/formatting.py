"""What the note tools return: plain markdown a model reads well, each item with the path and lines to read or cite
it by."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from secondbrain.chat.citations import check_citations
from secondbrain.date_sources import said
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.v1 import retrieval_pb2 as common
from secondbrain.wording import counted


def _tags(tags: Sequence[str]) -> str:
    return ", ".join("#" + tag for tag in tags)


def _heading(heading_path: Sequence[str]) -> str:
    return " > ".join(heading_path)


def search_results(response: pb.SearchResponse, query: str) -> str:
    if not response.hits:
        return f"No note matches {query!r}."
    containing = sum(hit.contains_query for hit in response.hits)
    if containing:
        lines = [
            f"{counted(len(response.hits), 'note')} for {query!r}, best first ({containing} "
            f"{'contains' if containing == 1 else 'contain'} the words):"
        ]
    else:
        lines = [f"No note contains {query!r}; {len(response.hits)} related by meaning, best first:"]
    for number, hit in enumerate(response.hits, start=1):
        where = f" (under {_heading(hit.heading_path)})" if hit.heading_path else ""
        tags = f"  tags: {_tags(hit.tags)}" if hit.tags else ""
        related = "  [related by meaning]" if not hit.contains_query else ""
        when = f", {dated}" if (dated := said(hit.date, hit.date_source)) else ""
        lines.append(f"{number}. {hit.path}: {hit.title}{when}{where}{tags}{related}")
        if hit.snippet:
            lines.append(textwrap.indent(hit.snippet, "   "))
    if response.vector_arm_skipped_reason:
        lines.append(f"(Matched by words only: {response.vector_arm_skipped_reason}.)")
    return "\n".join(lines)


def passage_label(passage: common.Passage) -> str:
    heading = f" > {_heading(passage.heading_path)}" if passage.heading_path else ""
    when = f", {dated}" if (dated := said(passage.date, passage.date_source)) else ""
    return f"[{passage.number}] {passage.note_path}{heading}, {place(passage)}{when}"


def passages(found: Sequence[common.Passage], question: str) -> str:
    if not found:
        return f"No passage in the notes answers {question!r}."
    parts = [f"{counted(len(found), 'passage')} for {question!r}, best first. Cite them by number."]
    parts += [f"{passage_label(p)}\n{p.text}" for p in found]
    return "\n\n".join(parts)


def place(passage: common.Passage) -> str:
    """Where in its file a passage is, as a person finds it: "page 12" (or "pages 12-13") in an attachment that
    has pages, else "lines 4-9"."""
    if passage.page_start:
        if passage.page_end and passage.page_end != passage.page_start:
            return f"pages {passage.page_start}-{passage.page_end}"
        return f"page {passage.page_start}"
    return f"lines {passage.start_line}-{passage.end_line}"


def located(passage: common.Passage) -> str:
    """A passage's file and place, for a terminal: `Notes/Plan.md:12-18` (as grep and editors take it), or
    `Manuals/Guide.pdf, page 12` in an attachment with pages."""
    if passage.page_start:
        return f"{passage.note_path}, {place(passage)}"
    return f"{passage.note_path}:{passage.start_line}-{passage.end_line}"


def note(response: pb.GetNoteResponse, read: common.Passage | None) -> str:
    """The lines read, as `read` holds them (the response's, or fewer when a reader's context had no room for
    all); a number when the reader gave the passage one."""
    if read is None:
        return f"{response.path}: {response.title}: no room was left to read it."
    span = f"lines {read.start_line}-{read.end_line} of {response.last_line}"
    if not response.lines_known:
        span += " (counted from the end of the front matter until the next sync)"
    number = f"[{read.number}] " if read.number else ""
    header = f"{number}{response.path}: {response.title}, {span}"
    if response.tags:
        header += f"; tags: {_tags(response.tags)}"
    more = ""
    if read.end_line < response.last_line:
        more = f"\n\n(The note goes on to line {response.last_line}: read on with start_line {read.end_line + 1}.)"
    return f"{header}\n\n{read.text}{more}"


def note_list(response: pb.ListNotesResponse, newest_first: bool = False) -> str:
    if not response.notes:
        return "No indexed note matches."
    order = "newest first" if newest_first else "by path"
    lines = [f"{len(response.notes)} of {counted(response.total, 'note')}, {order}:"]
    for summary in response.notes:
        tags = f"  tags: {_tags(summary.tags)}" if summary.tags else ""
        when = f", {dated}" if (dated := said(summary.date, summary.date_source)) else ""
        lines.append(f"- {summary.path}: {summary.title} ({counted(summary.last_line, 'line')}{when}){tags}")
    if response.total > len(response.notes):
        lines.append(f"({response.total - len(response.notes)} more: narrow by folder or tag, or raise the limit.)")
    return "\n".join(lines)


def links(response: pb.GetNoteLinksResponse) -> str:
    def link(item: pb.NoteLink, *, outgoing: bool) -> str:
        anchor = f"#{item.heading}" if item.heading else ""
        embed = "!" if item.is_embed else ""
        if outgoing:
            named = item.path or "no indexed note"
            return f"- line {item.line}: {embed}[[{item.target}{anchor}]] → {named}"
        return f"- {item.path}, line {item.line}: {embed}[[{item.target}{anchor}]]"

    out = [link(item, outgoing=True) for item in response.outgoing] or ["- none"]
    back = [link(item, outgoing=False) for item in response.backlinks] or ["- none"]
    return "\n".join([f"Links out of {response.path}:", *out, "", f"Notes linking to {response.path}:", *back])


def related(response: pb.GetRelatedNotesResponse) -> str:
    if not response.notes:
        lines = [f"No note is related to {response.path}."]
    else:
        lines = [f"{counted(len(response.notes), 'note')} related to {response.path}, most related first:"]
    for number, item in enumerate(response.notes, start=1):
        lines.append(f"{number}. {item.path}: {item.title} ({item.reason})")
        if item.similarity:
            where = f"{_heading(item.heading_path)}, " if item.heading_path else ""
            lines.append(f"   nearest in meaning: {where}lines {item.start_line}-{item.end_line}")
    if response.meaning_skipped_reason:
        lines.append(f"(Not compared by meaning: {response.meaning_skipped_reason}.)")
    return "\n".join(lines)


def cited(text: str, passages: Sequence[common.Passage]) -> tuple[str, list[common.Passage]]:
    """An answer's text with citations of missing passages stripped, and the passages it cites in the order it first
    cites them (all of them when it cites none, so an answer never comes without its sources)."""
    checked = check_citations(text, [p.number for p in passages])
    by_number = {p.number: p for p in passages}
    return checked.text, [by_number[number] for number in checked.cited] or list(passages)


def sources_list(sources: Sequence[common.Passage]) -> str:
    """The passages an answer cites as a markdown list under "Sources:", each by number, note, heading and lines."""
    return "Sources:\n" + "\n".join(f"- {passage_label(p)}" for p in sources)


def answer(text: str, sources: Sequence[common.Passage]) -> str:
    return f"{text.strip()}\n\n{sources_list(sources)}" if sources else text.strip()
