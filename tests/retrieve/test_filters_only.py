"""What the search page lists and shows under a date range, through gRPC on a real PostgreSQL: with filters alone,
ListNotes in the notes' own-date order; with words, each hit's section (its heading and snippet) is one the range
lets through, in every mode."""

from __future__ import annotations

import grpc
import pytest

from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.v1 import retrieval_pb2 as common
from tests.retrieve.conftest import Stack

# A log whose entries are dated by their headings: the note itself is dated only by its file's modification time.
LOG = (
    "# Kitchen log\n\nWhat happened in the kitchen.\n\n## 2026-01-21\n\nThe worktop template is booked.\n\n"
    "## 2026-04-10\n\nThe worktop was fitted: the worktop looks fine, a worktop at last.\n"
)
JANUARY = common.RetrievalFilters(date_from="2026-01-01", date_to="2026-01-31")


async def written(stack: Stack) -> None:
    stack.write("Areas/Kitchen log.md", LOG)
    stack.write("Areas/Evergreen.md", "# Evergreen\n\nNo day of its own.\n")
    stack.write("Journal/2026-01-20.md", "# 20 January\n\nChose the quartz worktop.\n")
    stack.write("Journal/2026-01-09.md", "# 9 January\n\nA walk by the river.\n")
    stack.write("Journal/2026-03-02.md", "# 2 March\n\nThe oak arrived.\n")
    stack.write("Quotes.md", "---\ndate: 2026-01-25\n---\n# Quotes\n\nQuartz 1,900.\n")
    # Dated by its front matter in March, with an entry of January under a dated heading.
    stack.write(
        "Kitchen.md",
        "---\ndate: 2026-03-01\n---\n# Kitchen\n\nThe plan.\n\n## 19 January 2026\n\nMeasured the worktop.\n",
    )
    await stack.ingest()


async def test_filters_alone_list_their_notes_newest_first_by_their_own_dates(stack: Stack) -> None:
    await written(stack)
    january = await stack.stub.ListNotes(pb.ListNotesRequest(filters=JANUARY, order=pb.LIST_ORDER_OWN_DATE))
    # The log sorts by its January entry (not its April one, nor its file's modification time, today).
    assert [n.path for n in january.notes] == [
        "Quotes.md",
        "Areas/Kitchen log.md",
        "Journal/2026-01-20.md",
        "Kitchen.md",
        "Journal/2026-01-09.md",
    ]
    assert january.total == 5
    # A folder alone: its notes dated by their own days first, newest first; a note with none after them.
    areas = await stack.stub.ListNotes(
        pb.ListNotesRequest(filters=common.RetrievalFilters(folders=["Areas"]), order=pb.LIST_ORDER_OWN_DATE)
    )
    assert [n.path for n in areas.notes] == ["Areas/Kitchen log.md", "Areas/Evergreen.md"]
    everything = await stack.stub.ListNotes(pb.ListNotesRequest(order=pb.LIST_ORDER_OWN_DATE, limit=3))
    assert [n.path for n in everything.notes] == ["Areas/Kitchen log.md", "Journal/2026-03-02.md", "Kitchen.md"]
    assert everything.total == 7
    # Newest by the note's date, as before: the notes dated by today's modification time come first.
    newest = await stack.stub.ListNotes(pb.ListNotesRequest(order=pb.LIST_ORDER_NEWEST))
    assert {n.path for n in newest.notes[:2]} == {"Areas/Kitchen log.md", "Areas/Evergreen.md"}
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stack.stub.ListNotes(pb.ListNotesRequest(order=7))  # type: ignore[arg-type]
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("mode", [pb.SEARCH_MODE_KEYWORD, pb.SEARCH_MODE_HYBRID, pb.SEARCH_MODE_SEMANTIC])
async def test_a_hits_heading_and_snippet_are_from_the_days_asked(stack: Stack, mode: pb.SearchMode.ValueType) -> None:
    await written(stack)
    found = await stack.stub.Search(pb.SearchRequest(query="worktop", mode=mode, filters=JANUARY), timeout=30)
    log = next(hit for hit in found.hits if hit.path == "Areas/Kitchen log.md")
    # The April entry holds "worktop" three times, but January was asked: the hit is its January entry.
    assert list(log.heading_path) == ["2026-01-21"], list(log.heading_path)
    assert log.snippet == "The worktop template is booked."
    assert (log.section_date, log.section_date_source) == ("2026-01-21", "heading")
    # Every hit is a note with a January passage (the vector arm lists its neighbours too, January's only), and
    # the day its section is from is in January: the March note's is its January entry's.
    assert {hit.path for hit in found.hits} <= {
        "Areas/Kitchen log.md", "Journal/2026-01-20.md", "Journal/2026-01-09.md", "Quotes.md", "Kitchen.md"
    }  # fmt: skip
    assert all("2026-01-01" <= hit.section_date <= "2026-01-31" for hit in found.hits), [
        (hit.path, hit.section_date) for hit in found.hits
    ]
    kitchen = next(hit for hit in found.hits if hit.path == "Kitchen.md")
    assert (kitchen.date, kitchen.date_source) == ("2026-03-01", "front matter date")
    assert (kitchen.section_date, kitchen.section_date_source, list(kitchen.heading_path)) == (
        "2026-01-19",
        "heading",
        ["19 January 2026"],
    )
    # Without the range, the entry with the most of the words is the hit's.
    anywhen = await stack.stub.Search(pb.SearchRequest(query="worktop", mode=mode), timeout=30)
    assert next(hit for hit in anywhen.hits if hit.path == "Areas/Kitchen log.md").heading_path == ["2026-04-10"]


async def test_words_only_outside_the_range_do_not_match_the_note(stack: Stack) -> None:
    await written(stack)
    # "fitted" is only in the log's April entry: a January search for it finds nothing.
    found = await stack.stub.Search(
        pb.SearchRequest(query="fitted", mode=pb.SEARCH_MODE_KEYWORD, filters=JANUARY), timeout=30
    )
    assert [hit.path for hit in found.hits] == []
    april = common.RetrievalFilters(date_from="2026-04-01", date_to="2026-04-30")
    found = await stack.stub.Search(pb.SearchRequest(query="fitted", mode=pb.SEARCH_MODE_KEYWORD, filters=april))
    assert [(hit.path, list(hit.heading_path)) for hit in found.hits] == [("Areas/Kitchen log.md", ["2026-04-10"])]
