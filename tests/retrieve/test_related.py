"""Related notes through gRPC on a real PostgreSQL (GetRelatedNotes): near in meaning by the notes' stored vectors
(the test embedder's vectors are bags of words: notes sharing words are near), linked either way, sharing links or
tags; each with why, in words."""

from __future__ import annotations

import grpc
import pytest

from secondbrain.retrieve.store import note_identity
from secondbrain.retrieve.store.related import _NEAREST
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from tests.retrieve.conftest import Stack

TOMATOES = "Garden/Tomatoes.md"


async def written(stack: Stack) -> None:
    stack.write(
        TOMATOES,
        "---\ntags: [garden, Summer]\n---\n# Tomatoes\n\n## Watering\n\nWater the tomatoes every morning before nine; "
        "mulch keeps the soil moist in the heat.\n\nFeed them with [[Compost]] once a month.\n",
    )
    stack.write(
        "Garden/Basil.md",
        "---\ntags: [garden]\n---\n# Basil\n\n## Watering\n\nWater the basil every morning before nine, less than the "
        "tomatoes; mulch keeps the soil moist.\n",
    )
    stack.write("Garden/Compost.md", "# Compost\n\nTurn the heap weekly; greens and browns in equal parts.\n")
    stack.write("Journal/2026-03-01.md", "Sowed seeds indoors. Plan in [[Tomatoes]].\n")
    stack.write("Recipes/Soup.md", "# Soup\n\nLeek and potato; peelings go to the [[Compost]].\n")
    stack.write("Ideas.md", "---\ntags: [summer]\n---\n# Ideas\n\nA hammock between the pear trees.\n")
    stack.write("Travel.md", "# Travel\n\nThe Lisbon trip is booked for May; we stay in Alfama.\n")
    await stack.ingest()


async def test_related_notes_by_meaning_links_and_tags_each_say_why(stack: Stack) -> None:
    await written(stack)
    found = await stack.stub.GetRelatedNotes(pb.GetRelatedNotesRequest(path=TOMATOES))
    assert found.path == TOMATOES and found.meaning_skipped_reason == ""
    by_path = {note.path: note for note in found.notes}
    assert TOMATOES not in by_path, "never the note itself"
    assert "Travel.md" not in by_path, "nothing relates Travel: it is not listed"

    basil = by_path["Garden/Basil.md"]
    assert basil.similarity > 0.5 and list(basil.heading_path) == ["Watering"]
    assert (basil.start_line, basil.end_line) != (0, 0) and basil.start_line <= basil.end_line
    assert list(basil.shared_tags) == ["garden"]
    assert basil.reason == "close in meaning (Watering); both tagged #garden"

    compost = by_path["Garden/Compost.md"]
    assert compost.linked_from_note and not compost.links_to_note and compost.reason == "linked from here"
    journal = by_path["Journal/2026-03-01.md"]
    assert journal.links_to_note and not journal.linked_from_note and journal.reason == "links here"
    soup = by_path["Recipes/Soup.md"]
    assert list(soup.shared_links) == ["Garden/Compost.md"] and soup.reason == "both link to Compost"
    # A tag in another case is the same tag, named as the note asked about writes it.
    ideas = by_path["Ideas.md"]
    assert list(ideas.shared_tags) == ["Summer"] and ideas.reason == "both tagged #Summer"
    # Related by links or tags alone: no similarity and no passage, as the API says.
    for related in (compost, journal, soup, ideas):
        assert (related.similarity, list(related.heading_path), related.start_line) == (0, [], 0), related

    # Best first: near in meaning with a shared tag beats a link alone, and a link beats a shared tag alone.
    order = [note.path for note in found.notes]
    assert order[0] == "Garden/Basil.md"
    assert order.index("Garden/Compost.md") < order.index("Ideas.md")
    assert [note.score for note in found.notes] == sorted((note.score for note in found.notes), reverse=True)

    limited = await stack.stub.GetRelatedNotes(pb.GetRelatedNotesRequest(path=TOMATOES, limit=2))
    assert [note.path for note in limited.notes] == order[:2]
    # The wikilink form of the path reads as GetNote reads it.
    named = await stack.stub.GetRelatedNotes(pb.GetRelatedNotesRequest(path="tomatoes"))
    assert named.path == TOMATOES and [note.path for note in named.notes] == order


async def test_a_note_without_vectors_is_still_related_by_links_and_tags_and_says_why(stack: Stack) -> None:
    await written(stack)
    async with stack.db.pool.acquire() as connection:
        await connection.execute(
            "UPDATE vault_chunks SET embedding = NULL FROM vault_files f WHERE f.id = file_id AND f.path = $1", TOMATOES
        )
    found = await stack.stub.GetRelatedNotes(pb.GetRelatedNotesRequest(path=TOMATOES))
    assert "waiting to be embedded" in found.meaning_skipped_reason
    by_path = {note.path: note for note in found.notes}
    assert by_path["Garden/Basil.md"].similarity == 0 and by_path["Garden/Basil.md"].reason == "both tagged #garden"
    assert by_path["Garden/Compost.md"].linked_from_note
    async with stack.db.pool.acquire() as connection:
        await connection.execute("DELETE FROM embedding_model")
    found = await stack.stub.GetRelatedNotes(pb.GetRelatedNotesRequest(path="Garden/Basil.md"))
    assert "nothing has been embedded yet" in found.meaning_skipped_reason
    assert [note.path for note in found.notes] == [TOMATOES]


@pytest.mark.parametrize(
    ("request_", "code", "words"),
    [
        (pb.GetRelatedNotesRequest(path="Nowhere.md"), grpc.StatusCode.NOT_FOUND, "holds no note at 'Nowhere.md'"),
        (pb.GetRelatedNotesRequest(path=""), grpc.StatusCode.INVALID_ARGUMENT, "path is empty"),
        (pb.GetRelatedNotesRequest(path=TOMATOES, limit=51), grpc.StatusCode.INVALID_ARGUMENT, "1 to 50"),
        (pb.GetRelatedNotesRequest(path=TOMATOES, limit=-1), grpc.StatusCode.INVALID_ARGUMENT, "1 to 50"),
    ],
)
async def test_an_unknown_note_or_a_bad_limit_is_refused_saying_what_to_do(
    stack: Stack, request_: pb.GetRelatedNotesRequest, code: grpc.StatusCode, words: str
) -> None:
    await written(stack)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stack.stub.GetRelatedNotes(request_)
    assert refused.value.code() == code and words in (refused.value.details() or "")


async def test_the_nearest_statement_is_answered_by_the_hnsw_index_not_a_scan_of_all_pairs(stack: Stack) -> None:
    # The test vault is too small for the planner to prefer the index; with sequential scans priced out it must still
    # be able to use it (the statement repeats the partial index's expression and predicate), once per sampled chunk.
    await written(stack)
    async with stack.db.pool.acquire() as connection:
        note = await note_identity(connection, TOMATOES)
        assert note is not None
        async with connection.transaction():
            await connection.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off")
            sql = _NEAREST.format(dim=1536, me="$1", sources="$2", per_source="$3", readable="true")
            plan = "\n".join(row[0] for row in await connection.fetch(f"EXPLAIN {sql}", note.id, 16, 20))
    assert "vault_chunks_embedding_1536_idx" in plan, plan
