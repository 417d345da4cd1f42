"""What the reader and the browse views read, through gRPC on a real PostgreSQL: a note's properties and date
(GetNote), the vault's folders, tags and days with counts (GetFacets), and the notes filter ("ask about this note")
in every RPC that takes filters."""

from __future__ import annotations

import json

import grpc
import pytest

from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.v1 import retrieval_pb2 as common
from tests.ingest import files_made
from tests.retrieve.conftest import Stack

KITCHEN = """---
title: Kitchen Renovation
tags: [project/kitchen, Budget]
status: active
cost: 14000
---
# Kitchen Renovation

We chose a quartz worktop. See [[Suppliers]] for the stone.
"""


async def written(stack: Stack) -> None:
    stack.write("Projects/Home/Kitchen Renovation.md", KITCHEN)
    stack.write("Projects/Home/Garden.md", "---\ntags: [project/garden]\n---\n# Garden\n\nThe quartz gravel path.\n")
    stack.write("Projects/Plan.md", "# Plan\n\nA quartz plan. #budget #project\n")
    stack.write("Areas/Suppliers.md", "# Suppliers\n\nCosta cut the quartz worktop. #Project/Kitchen\n")
    stack.write("Journal/2026-01-20.md", "Talked about the quartz worktop with Rui.\n")
    stack.write("Journal/2026-01-21.md", "Nothing about quartz today.\n")
    stack.write("Loose.md", "Quartz, loose in the vault root.\n")
    await stack.ingest()


async def test_a_note_reads_with_its_front_matter_as_properties_and_its_date(stack: Stack) -> None:
    await written(stack)
    kitchen = await stack.stub.GetNote(pb.GetNoteRequest(path="Projects/Home/Kitchen Renovation.md"))
    assert json.loads(kitchen.properties_json) == {
        "title": "Kitchen Renovation",
        "tags": ["project/kitchen", "Budget"],
        "status": "active",
        "cost": 14000,
    }
    listed = await stack.stub.ListNotes(pb.ListNotesRequest())
    as_listed = {note.path: (note.date, note.date_source) for note in listed.notes}
    assert (kitchen.date, kitchen.date_source) == as_listed[kitchen.path] and kitchen.date
    journal = await stack.stub.GetNote(pb.GetNoteRequest(path="Journal/2026-01-20.md"))
    assert (journal.date, journal.date_source, journal.properties_json) == ("2026-01-20", "file name", "{}")


async def test_facets_count_folders_with_subfolders_nested_tags_with_parents_and_days(stack: Stack) -> None:
    await written(stack)
    facets = await stack.stub.GetFacets(pb.GetFacetsRequest())
    assert [(f.value, f.count) for f in facets.folders] == [
        ("Areas", 1),
        ("Journal", 2),
        ("Projects", 3),
        ("Projects/Home", 2),
    ]
    # 'project' is carried by Plan alone, but counts every note with a child of it; 'Budget' and '#budget' are one
    # tag; Suppliers' '#Project/Kitchen' is 'project/kitchen'.
    assert [(t.value, t.count) for t in facets.tags] == [
        ("budget", 2),
        ("project", 4),
        ("project/garden", 1),
        ("project/kitchen", 2),
    ]
    days = [(d.value, d.count) for d in facets.days]
    assert ("2026-01-20", 1) in days and ("2026-01-21", 1) in days and days == sorted(days)
    assert facets.notes == 7 and facets.notes - facets.undated_notes == sum(count for _, count in days)
    # Days are the notes' own dates: a note dated only by its file's modification time is counted as undated.
    listed = await stack.stub.ListNotes(pb.ListNotesRequest())
    modified = [n for n in listed.notes if n.date_source == "modification time"]
    assert modified and facets.undated_notes == len(modified)
    assert all(day not in {n.date for n in modified} for day, _ in days)

    # Within a folder, as the browse view shows counts inside it.
    inside = await stack.stub.GetFacets(pb.GetFacetsRequest(filters=common.RetrievalFilters(folders=["Projects/Home"])))
    assert [(f.value, f.count) for f in inside.folders] == [("Projects", 2), ("Projects/Home", 2)]
    # Only the Kitchen note is in it, and it writes 'Budget'.
    assert [(t.value, t.count) for t in inside.tags] == [
        ("Budget", 1),
        ("project", 2),
        ("project/garden", 1),
        ("project/kitchen", 1),
    ]
    assert inside.notes == 2
    dated = await stack.stub.GetFacets(
        pb.GetFacetsRequest(filters=common.RetrievalFilters(date_from="2026-01-20", date_to="2026-01-20"))
    )
    assert [(d.value, d.count) for d in dated.days] == [("2026-01-20", 1)] and dated.notes == 1
    assert dated.undated_notes == 0 and [(f.value, f.count) for f in dated.folders] == [("Journal", 1)]


async def test_an_empty_vault_has_no_facets(stack: Stack) -> None:
    facets = await stack.stub.GetFacets(pb.GetFacetsRequest())
    assert (list(facets.folders), list(facets.tags), list(facets.days), facets.notes) == ([], [], [], 0)


SCOPE = ["Projects/Home/Kitchen Renovation.md", "Areas/Suppliers.md"]


@pytest.mark.parametrize(
    "mode", [common.RETRIEVAL_MODE_HYBRID, common.RETRIEVAL_MODE_LEXICAL, common.RETRIEVAL_MODE_VECTOR]
)
async def test_the_notes_filter_keeps_retrieval_to_the_notes_named_in_every_arm(
    stack: Stack, mode: common.RetrievalMode.ValueType
) -> None:
    await written(stack)
    everywhere, passages = await stack.retrieve("quartz", condense=False, mode=mode, max_passages=20)
    assert len({p.note_path for p in passages}) > len(SCOPE), "without the filter, other notes answer too"
    filters = common.RetrievalFilters(notes=SCOPE)
    plan, passages = await stack.retrieve("quartz", condense=False, mode=mode, max_passages=20, filters=filters)
    assert {p.note_path for p in passages} == set(SCOPE)
    assert list(plan.filters.notes) == SCOPE and list(everywhere.filters.notes) == []


async def test_link_expansion_does_not_leave_the_notes_named(stack: Stack) -> None:
    await written(stack)
    await stack.configure(retrieve={"wikilink_expansion": True})
    lexical = common.RETRIEVAL_MODE_LEXICAL
    # Only the Kitchen note says "chose"; unscoped, its link brings in Suppliers.
    _, passages = await stack.retrieve("chose", condense=False, mode=lexical)
    kitchen, suppliers = "Projects/Home/Kitchen Renovation.md", "Areas/Suppliers.md"
    assert [(p.note_path, p.via_link) for p in passages] == [(kitchen, False), (suppliers, True)]
    _, passages = await stack.retrieve(
        "chose", condense=False, mode=lexical, filters=common.RetrievalFilters(notes=[kitchen])
    )
    assert [(p.note_path, p.via_link) for p in passages] == [(kitchen, False)]
    both = common.RetrievalFilters(notes=[kitchen, suppliers])
    _, passages = await stack.retrieve("chose", condense=False, mode=lexical, filters=both)
    assert [(p.note_path, p.via_link) for p in passages] == [(kitchen, False), (suppliers, True)]


async def test_the_notes_filter_applies_to_search_and_list_notes(stack: Stack) -> None:
    await written(stack)
    filters = common.RetrievalFilters(notes=[*SCOPE, "Not/Indexed.md"])
    for mode in (pb.SEARCH_MODE_HYBRID, pb.SEARCH_MODE_KEYWORD, pb.SEARCH_MODE_SEMANTIC):
        found = await stack.stub.Search(pb.SearchRequest(query="quartz", mode=mode, filters=filters))
        assert sorted(hit.path for hit in found.hits) == sorted(SCOPE), mode
    listed = await stack.stub.ListNotes(pb.ListNotesRequest(filters=filters))
    assert [note.path for note in listed.notes] == sorted(SCOPE) and listed.total == 2
    # With a folder too, both must hold.
    both = common.RetrievalFilters(notes=SCOPE, folders=["Areas"])
    listed = await stack.stub.ListNotes(pb.ListNotesRequest(filters=both))
    assert [note.path for note in listed.notes] == ["Areas/Suppliers.md"]
    facets = await stack.stub.GetFacets(pb.GetFacetsRequest(filters=filters))
    assert facets.notes == 2


@pytest.mark.parametrize(
    ("notes", "words"),
    [
        ([""], "not a note of the vault"),
        (["../secondbrain.json"], "no '..'"),
        (["/etc/passwd"], "not a note of the vault"),
        (["a\x00b"], "NUL character"),
        (["x" * 2000], "at most 1024 characters"),
        ([f"Note {n}.md" for n in range(201)], "at most 200"),
    ],
)
async def test_a_notes_filter_that_names_no_note_path_is_refused_saying_how(
    stack: Stack, notes: list[str], words: str
) -> None:
    filters = common.RetrievalFilters(notes=notes)
    for call in (
        stack.stub.ListNotes(pb.ListNotesRequest(filters=filters)),
        stack.stub.Search(pb.SearchRequest(query="quartz", filters=filters)),
        stack.stub.GetFacets(pb.GetFacetsRequest(filters=filters)),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert words in (refused.value.details() or "")
    # 200 is allowed: a note and its links.
    listed = await stack.stub.ListNotes(
        pb.ListNotesRequest(filters=common.RetrievalFilters(notes=[f"Note {n}.md" for n in range(200)]))
    )
    assert listed.total == 0


async def test_facets_count_the_files_by_the_type_a_filter_names(stack: Stack) -> None:
    await written(stack)
    files_made.write(stack.vault, "Manuals/Boiler manual.pdf", files_made.pdf([["Bleed the radiators."]]))
    files_made.write(stack.vault, "Boards/Plan.canvas", files_made.canvas(["Order the pump"]))
    await stack.ingest()
    facets = await stack.stub.GetFacets(pb.GetFacetsRequest())
    assert [(f.value, f.count) for f in facets.file_types] == [("note", 7), ("pdf", 1), ("canvas", 1)]
    pdfs = await stack.stub.GetFacets(pb.GetFacetsRequest(filters=common.RetrievalFilters(file_types=["pdf"])))
    assert [(f.value, f.count) for f in pdfs.file_types] == [("pdf", 1)] and pdfs.notes == 1
