"""Reading notes from the index through gRPC (GetNote, ListNotes, GetNoteLinks) on a real PostgreSQL: lines numbered
as passages number them, paths the index does not hold refused, links resolved both ways."""

from __future__ import annotations

import unicodedata

import grpc
import pytest

from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.v1 import retrieval_pb2 as common
from tests.retrieve.conftest import Stack

KITCHEN = """---
tags: [project, home]
aliases: [Kitchen]
---
# Kitchen Renovation

## Worktop
We chose a 30 mm quartz composite, pale grey.
See [[Suppliers#Stone]] and [[Budget]].

## Electrics
The electrician is Rui.
![[Floor plan]]
"""


async def written(stack: Stack) -> None:
    stack.write("Projects/Kitchen Renovation.md", KITCHEN)
    stack.write("Areas/Suppliers.md", "# Suppliers\n\n## Stone\nCosta & Filhos cut the worktop.\n")
    stack.write("Journal/2026-01-20.md", "Rui can start on the [[Kitchen]] electrics on 3 February.\n")
    stack.write("Journal/2026-01-21.md", "Nothing about the house today.\n")
    await stack.ingest()


async def test_a_note_is_read_by_its_wikilink_form_or_another_case_and_a_near_miss_suggests(stack: Stack) -> None:
    # Found by a user: `read_note` refused `Projects/Kitchen Renovation` (as the note's wikilinks write it) and a
    # wrong case, with no "did you mean".
    await written(stack)
    for given in ("Projects/Kitchen Renovation", "projects/kitchen renovation.md", "Kitchen Renovation", "Kitchen"):
        note = await stack.stub.GetNote(pb.GetNoteRequest(path=given))
        assert note.path == "Projects/Kitchen Renovation.md", given
    links = await stack.stub.GetNoteLinks(pb.GetNoteLinksRequest(path="areas/suppliers"))
    assert links.path == "Areas/Suppliers.md"
    stack.write("Archive/Suppliers.md", "# Suppliers\n\nThe old list.\n")
    await stack.ingest()
    with pytest.raises(grpc.aio.AioRpcError) as ambiguous:
        await stack.stub.GetNote(pb.GetNoteRequest(path="Suppliers"))
    assert ambiguous.value.code() == grpc.StatusCode.NOT_FOUND
    assert "did you mean 'Archive/Suppliers.md' or 'Areas/Suppliers.md'?" in (ambiguous.value.details() or "")


async def test_a_note_reads_whole_or_by_the_line_numbers_passages_give(stack: Stack) -> None:
    await written(stack)
    whole = await stack.stub.GetNote(pb.GetNoteRequest(path="Projects/Kitchen Renovation.md"))
    assert whole.title == "Kitchen Renovation" and whole.lines_known
    assert (whole.start_line, whole.end_line, whole.last_line) == (5, 13, 13), "the front matter is lines 1-4"
    assert whole.text.startswith("# Kitchen Renovation\n") and "tags:" not in whole.text
    assert list(whole.tags) == ["project", "home"] and list(whole.aliases) == ["Kitchen"]

    _, passages = await stack.retrieve("quartz composite worktop", condense=False)
    worktop = next(p for p in passages if p.note_path == "Projects/Kitchen Renovation.md")
    lines = await stack.stub.GetNote(
        pb.GetNoteRequest(path=worktop.note_path, start_line=worktop.start_line, end_line=worktop.end_line)
    )
    assert "quartz composite" in lines.text
    assert lines.text == "\n".join(KITCHEN.split("\n")[worktop.start_line - 1 : worktop.end_line])

    electrics = await stack.stub.GetNote(pb.GetNoteRequest(path=whole.path, start_line=11, end_line=12))
    assert electrics.text == "## Electrics\nThe electrician is Rui."
    from_front_matter = await stack.stub.GetNote(pb.GetNoteRequest(path=whole.path, start_line=2, end_line=5))
    assert (from_front_matter.start_line, from_front_matter.text) == (5, "# Kitchen Renovation")
    past_the_end = await stack.stub.GetNote(pb.GetNoteRequest(path=whole.path, start_line=13, end_line=99))
    assert (past_the_end.end_line, past_the_end.text) == (13, "![[Floor plan]]")


@pytest.mark.parametrize(
    ("request_", "code", "words"),
    [
        (pb.GetNoteRequest(path="Projects/Nope.md"), grpc.StatusCode.NOT_FOUND, "list_notes"),
        (pb.GetNoteRequest(path="/etc/passwd"), grpc.StatusCode.NOT_FOUND, "holds no note"),
        (pb.GetNoteRequest(path="../secondbrain.json"), grpc.StatusCode.NOT_FOUND, "holds no note"),
        (pb.GetNoteRequest(path=""), grpc.StatusCode.INVALID_ARGUMENT, "path is empty"),
        (pb.GetNoteRequest(path="Areas/Suppliers.md", start_line=40), grpc.StatusCode.INVALID_ARGUMENT, "ends at line"),
        (
            pb.GetNoteRequest(path="Areas/Suppliers.md", start_line=3, end_line=2),
            grpc.StatusCode.INVALID_ARGUMENT,
            "before the start line",
        ),
        (pb.GetNoteRequest(path="Areas/Suppliers.md", start_line=-1), grpc.StatusCode.INVALID_ARGUMENT, "start at 1"),
    ],
)
async def test_a_path_the_index_does_not_hold_or_lines_it_has_not_are_refused_with_what_to_do(
    stack: Stack, request_: pb.GetNoteRequest, code: grpc.StatusCode, words: str
) -> None:
    await written(stack)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stack.stub.GetNote(request_)
    assert refused.value.code() == code and words in (refused.value.details() or "")


async def test_notes_list_by_path_under_folders_or_tags(stack: Stack) -> None:
    await written(stack)
    everything = await stack.stub.ListNotes(pb.ListNotesRequest())
    assert [n.path for n in everything.notes] == [
        "Areas/Suppliers.md",
        "Journal/2026-01-20.md",
        "Journal/2026-01-21.md",
        "Projects/Kitchen Renovation.md",
    ]
    assert everything.total == 4
    kitchen = everything.notes[3]
    assert (kitchen.title, list(kitchen.tags), kitchen.last_line) == ("Kitchen Renovation", ["project", "home"], 13)

    journal = await stack.stub.ListNotes(
        pb.ListNotesRequest(filters=common.RetrievalFilters(folders=["Journal"]), limit=1)
    )
    assert [n.path for n in journal.notes] == ["Journal/2026-01-20.md"] and journal.total == 2
    tagged = await stack.stub.ListNotes(pb.ListNotesRequest(filters=common.RetrievalFilters(tags=["home"])))
    assert [n.path for n in tagged.notes] == ["Projects/Kitchen Renovation.md"]
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stack.stub.ListNotes(pb.ListNotesRequest(limit=5000))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_links_resolve_out_and_back_by_path_title_or_alias(stack: Stack) -> None:
    await written(stack)
    links = await stack.stub.GetNoteLinks(pb.GetNoteLinksRequest(path="Projects/Kitchen Renovation.md"))
    assert [(link.target, link.path, link.heading, link.line, link.is_embed) for link in links.outgoing] == [
        ("Suppliers", "Areas/Suppliers.md", "Stone", 9, False),
        ("Budget", "", "", 9, False),  # names no indexed note
        ("Floor plan", "", "", 13, True),
    ]
    # The journal links by the note's alias.
    assert [(link.path, link.target, link.line) for link in links.backlinks] == [
        ("Journal/2026-01-20.md", "Kitchen", 1)
    ]
    suppliers = await stack.stub.GetNoteLinks(pb.GetNoteLinksRequest(path="Areas/Suppliers.md"))
    assert [link.path for link in suppliers.backlinks] == ["Projects/Kitchen Renovation.md"]
    assert list(suppliers.outgoing) == []
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stack.stub.GetNoteLinks(pb.GetNoteLinksRequest(path="Nowhere.md"))
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND


async def test_a_note_stored_before_its_line_numbers_were_says_so_until_the_next_sync(stack: Stack) -> None:
    await written(stack)
    path = "Projects/Kitchen Renovation.md"
    async with stack.db.pool.acquire() as connection:
        # What migration 0007 leaves of a row written before it.
        await connection.execute(
            "UPDATE vault_files SET body_start_line = NULL, mtime = NULL, content_hash = '' WHERE path = $1", path
        )
    old = await stack.stub.GetNote(pb.GetNoteRequest(path=path))
    assert not old.lines_known and (old.start_line, old.last_line) == (1, 9)
    embedded_before = sum(r.path.endswith("/embeddings") for r in stack.llm.requests)
    await stack.ingest()
    synced = await stack.stub.GetNote(pb.GetNoteRequest(path=path))
    assert synced.lines_known and (synced.start_line, synced.last_line) == (5, 13)
    # The note was read and rewritten, and kept every chunk's vector: nothing was embedded again.
    assert sum(r.path.endswith("/embeddings") for r in stack.llm.requests) == embedded_before > 0


async def test_a_note_is_read_by_its_decomposed_spelling_too(stack: Stack) -> None:
    # Found by a third probe (issue 47, friction 2): UpsertNote and DeleteNote took `café.md` spelled decomposed
    # (as macOS writes names), GetNote answered NOT_FOUND.
    stack.write("Café.md", "# Café\n\nThe one on the corner.\n")
    await stack.ingest()
    decomposed = unicodedata.normalize("NFD", "Café.md")
    assert decomposed != "Café.md"
    note = await stack.stub.GetNote(pb.GetNoteRequest(path=decomposed))
    assert note.path == "Café.md" and "corner" in note.text
    links = await stack.stub.GetNoteLinks(pb.GetNoteLinksRequest(path=decomposed))
    assert links.path == "Café.md"
    related = await stack.stub.GetRelatedNotes(pb.GetRelatedNotesRequest(path=decomposed))
    assert related is not None
