"""The RetrieveService through gRPC on a real PostgreSQL: every stage, its knobs and its fallbacks."""

from __future__ import annotations

import grpc
import pytest

from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.v1 import retrieval_pb2 as common
from tests.retrieve.conftest import Stack
from tests.wire import Reply

NO_CONDENSE = {"condense": False}


def long_note(title: str, topic_at: int, sections: int = 12) -> str:
    body = "\n\n".join(
        f"## Part {i}\n\n"
        + (
            "This part records the zeppelin hangar decision in detail."
            if i == topic_at
            else f"Filler paragraph number {i} about ordinary matters, walking, cooking and reading."
        )
        for i in range(sections)
    )
    return f"# {title}\n\n{body}\n"


async def test_crafted_case_where_each_arm_alone_is_wrong_and_fusion_is_right(stack: Stack) -> None:
    # BM25 stems and drops stopwords; the test embedder compares surface words, stopwords included.
    stack.write("Stems.md", "quarter quarters budgeted budgeting")  # lexically strong, no shared surface word
    stack.write("Stopwords.md", "the the the the the")  # close in vector space, no lexeme at all
    stack.write("Right.md", "budget review notes for today")  # second in both arms
    for i in range(3):
        stack.write(f"Filler {i}.md", f"the cat sat {i}")
    await stack.ingest()
    query = "the quarterly budget review"
    _, lexical = await stack.retrieve(query, mode=common.RETRIEVAL_MODE_LEXICAL, **NO_CONDENSE)
    _, vector = await stack.retrieve(query, mode=common.RETRIEVAL_MODE_VECTOR, **NO_CONDENSE)
    plan, hybrid = await stack.retrieve(query, **NO_CONDENSE)
    assert lexical[0].note_path == "Stems.md"
    assert vector[0].note_path == "Stopwords.md"
    assert hybrid[0].note_path == "Right.md"
    assert (hybrid[0].lexical_rank, hybrid[0].vector_rank) == (2, 2)
    assert plan.vector_arm_ran and plan.embedding_model == "openai:text-embedding-3-small"


async def test_lexical_only_says_why_the_vector_arm_did_not_run(stack: Stack) -> None:
    stack.write("Plan.md", "# Plan\n\nWe chose PostgreSQL with pgvector.\n")
    await stack.ingest()
    plan, passages = await stack.retrieve("pgvector", mode=common.RETRIEVAL_MODE_LEXICAL, **NO_CONDENSE)
    assert not plan.vector_arm_ran and "lexical" in plan.vector_arm_skipped_reason
    assert [p.note_path for p in passages] == ["Plan.md"]
    assert passages[0].vector_rank == 0 and passages[0].lexical_rank == 1


async def test_embedder_down_falls_back_to_lexical_and_says_so(stack: Stack) -> None:
    stack.write("Plan.md", "# Plan\n\nWe chose PostgreSQL with pgvector.\n")
    await stack.ingest()
    stack.llm.script.default = Reply(status=401)
    plan, passages = await stack.retrieve("pgvector", **NO_CONDENSE)
    assert not plan.vector_arm_ran
    assert "embedder failed" in plan.vector_arm_skipped_reason and "OPENAI_API_KEY" in plan.vector_arm_skipped_reason
    assert [p.note_path for p in passages] == ["Plan.md"]


async def test_index_built_by_another_model_skips_the_vector_arm(stack: Stack) -> None:
    stack.write("Plan.md", "# Plan\n\nWe chose PostgreSQL with pgvector.\n")
    await stack.ingest()
    await stack.configure(embedding={"provider": "openai", "model": "text-embedding-3-large"})
    plan, passages = await stack.retrieve("pgvector", **NO_CONDENSE)
    assert not plan.vector_arm_ran
    assert "built with openai:text-embedding-3-small" in plan.vector_arm_skipped_reason
    assert passages


async def test_condensing_a_follow_up_and_its_fallback(stack: Stack) -> None:
    stack.write("Zeppelin.md", long_note("Zeppelin", 3))
    await stack.ingest()
    history = [
        common.HistoryMessage(role=common.MESSAGE_ROLE_USER, content="What did we decide about the hangar?"),
        common.HistoryMessage(role=common.MESSAGE_ROLE_ASSISTANT, content="You chose the zeppelin hangar [1]."),
    ]
    stack.llm.script.push(Reply(deltas=['{"query": "zeppelin hangar decision", "alternates": []}']))
    plan, passages = await stack.retrieve("and why?", history=history)
    assert [(q.text, q.kind) for q in plan.queries] == [("zeppelin hangar decision", common.QUERY_KIND_CONDENSED)]
    assert plan.condense_skipped_reason == ""
    assert passages[0].note_path == "Zeppelin.md"

    # A reply that is not the JSON asked for: the follow-up is searched as typed and after the turns before it.
    stack.llm.script.push(Reply(deltas=["I would rather not."]))
    plan, _ = await stack.retrieve("and why?", history=history)
    assert [(q.text, q.kind) for q in plan.queries] == [
        ("and why?", common.QUERY_KIND_ORIGINAL),
        (
            "What did we decide about the hangar? You chose the zeppelin hangar. and why?",
            common.QUERY_KIND_WITH_HISTORY,
        ),
    ]
    assert "the condense call failed" in plan.condense_skipped_reason
    assert "together with the turns before it" in plan.condense_skipped_reason


async def test_with_no_model_a_follow_up_finds_the_note_its_conversation_names(stack: Stack) -> None:
    # "What colour did we pick?" alone is about the fence; the conversation says it is about the worktop.
    notes = {
        "Garden fence.md": "The fence is green; we pick its colour again each spring.",
        "Kitchen worktop.md": "We chose a quartz composite for the kitchen worktop, in a pale grey colour.",
        "Worktop supplier.md": "The supplier delivered the quartz composite slabs for the kitchen worktop.",
        "Kitchen tiles.md": "The kitchen wall tiles are white metro tiles.",
    }
    for path, text in notes.items():
        stack.write(path, f"# {path[:-3]}\n\n{text}\n")
    await stack.ingest()
    await stack.configure(retrieve={"condense_provider": "extractive"})
    history = [
        common.HistoryMessage(role=common.MESSAGE_ROLE_USER, content="What did we choose for the kitchen worktop?"),
        common.HistoryMessage(role=common.MESSAGE_ROLE_ASSISTANT, content="Quartz composite [1]."),
    ]
    _, as_typed = await stack.retrieve("What colour did we pick?")
    assert as_typed[0].note_path == "Garden fence.md"
    plan, passages = await stack.retrieve("What colour did we pick?", history=history)
    assert [q.kind for q in plan.queries] == [common.QUERY_KIND_ORIGINAL, common.QUERY_KIND_WITH_HISTORY]
    assert "together with the turns before it" in plan.condense_skipped_reason
    assert passages[0].note_path == "Kitchen worktop.md"


async def test_alternates_are_fused_across_queries(stack: Stack) -> None:
    stack.write("Hangar.md", "# Hangar\n\nThe zeppelin hangar was approved.\n")
    stack.write("Airship.md", "# Airship\n\nDirigible storage costs were estimated.\n")
    await stack.ingest()
    stack.llm.script.push(Reply(deltas=['{"query": "zeppelin hangar", "alternates": ["dirigible storage costs"]}']))
    history = [common.HistoryMessage(role=common.MESSAGE_ROLE_USER, content="Tell me about airships.")]
    plan, passages = await stack.retrieve("what do my notes say?", history=history)
    assert [q.kind for q in plan.queries] == [common.QUERY_KIND_CONDENSED, common.QUERY_KIND_ALTERNATE]
    assert {p.note_path for p in passages[:2]} == {"Hangar.md", "Airship.md"}


async def test_neighbours_expand_and_contiguous_spans_merge(stack: Stack) -> None:
    stack.write("Zeppelin.md", long_note("Zeppelin", 5, sections=12))
    await stack.ingest()
    _, passages = await stack.retrieve("zeppelin hangar decision", max_passages=3, **NO_CONDENSE)
    first = passages[0]
    assert first.note_path == "Zeppelin.md"
    assert "zeppelin hangar decision" in first.text
    assert len(first.chunk_indexes) == 3 and first.chunk_indexes == sorted(first.chunk_indexes)
    assert first.heading_path == ["Part 4 … Part 6"], "where its text starts, and where it runs to"
    assert first.start_line < first.end_line
    # Without expansion the passage is the chunk alone.
    _, bare = await stack.retrieve("zeppelin hangar decision", max_passages=3, expand_neighbours=False, **NO_CONDENSE)
    assert len(bare[0].chunk_indexes) == 1
    numbers = [p.number for p in passages]
    assert numbers == list(range(1, len(passages) + 1))
    spans = [(p.note_path, i) for p in passages for i in p.chunk_indexes]
    assert len(spans) == len(set(spans)), "no chunk appears in two passages"


async def test_a_narrow_folder_filter_still_returns_its_notes(stack: Stack) -> None:
    # Sixty notes outside the folder are all nearer the query than the two inside it: the vector arm's index scan
    # must keep going (iterative scan) until the filter lets k rows through.
    words = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
        "kilo",
        "lima",
        "mike",
        "november",
        "oscar",
    ]
    for i in range(60):
        extra = " ".join(words[(i * 7 + j) % len(words)] for j in range(i % 4 + 1))
        stack.write(f"Elsewhere/Near {i}.md", f"# Near {i}\n\nzeppelin hangar {extra}\n")
    stack.write("Projects/Far.md", "# Far\n\nA zeppelin somewhere.\n")
    stack.write("Projects/Farther.md", "# Farther\n\nTravel by zeppelin, one day.\n")
    stack.write("Projects/Tagged.md", "---\ntags: [project/alpha]\n---\n# Tagged\n\nOther words entirely.\n")
    await stack.ingest()
    folder = common.RetrievalFilters(folders=["Projects"])
    plan, passages = await stack.retrieve(
        "zeppelin hangar", filters=folder, mode=common.RETRIEVAL_MODE_VECTOR, **NO_CONDENSE
    )
    assert plan.vector_arm_ran and list(plan.filters.folders) == ["Projects"]
    assert {p.note_path for p in passages} >= {"Projects/Far.md", "Projects/Farther.md"}
    assert all(p.note_path.startswith("Projects/") for p in passages)
    _, tagged = await stack.retrieve("words", filters=common.RetrievalFilters(tags=["#project"]), **NO_CONDENSE)
    assert [p.note_path for p in tagged] == ["Projects/Tagged.md"]


async def test_rerank_reorders_and_its_failure_keeps_the_fused_order(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack.write("A.md", "# A\n\nzeppelin zeppelin zeppelin notes\n")
    stack.write("B.md", "# B\n\nzeppelin hangar decision approved\n")
    await stack.ingest()
    monkeypatch.setenv("SECONDBRAIN_ALLOW_VAULT_PROVIDERS", "1")  # the stand-in reranker is a URL of the vault's
    await stack.configure(
        retrieve={"reranker": {"provider": "custom", "base_url": stack.reranker.root_url, "model": "test-reranker"}}
    )
    plan, passages = await stack.retrieve("zeppelin hangar decision approved", rerank=True, **NO_CONDENSE)
    assert plan.reranked and plan.rerank_skipped_reason == ""
    assert passages[0].note_path == "B.md"
    assert passages[0].HasField("rerank_score")
    assert [r.path for r in stack.reranker.requests] == ["/v1/rerank"]

    stack.reranker.script.default = Reply(status=400, error_message="bad model")
    plan, passages = await stack.retrieve("zeppelin hangar decision approved", rerank=True, **NO_CONDENSE)
    assert not plan.reranked and "fused order is kept" in plan.rerank_skipped_reason
    assert passages and not passages[0].HasField("rerank_score")


async def test_linked_notes_join_as_low_ranked_candidates(stack: Stack) -> None:
    stack.write("Hub.md", "# Hub\n\nThe zeppelin plan is in [[Details]].\n")
    stack.write("Details.md", "# Details\n\nBudget, crew and schedule.\n")
    await stack.ingest()
    _, before = await stack.retrieve("zeppelin plan", mode=common.RETRIEVAL_MODE_LEXICAL, **NO_CONDENSE)
    assert [p.note_path for p in before] == ["Hub.md"]
    await stack.configure(retrieve={"wikilink_expansion": True})
    _, after = await stack.retrieve("zeppelin plan", mode=common.RETRIEVAL_MODE_LEXICAL, **NO_CONDENSE)
    assert [(p.note_path, p.via_link) for p in after] == [("Hub.md", False), ("Details.md", True)]


async def test_phrases_and_exclusions_apply(stack: Stack) -> None:
    stack.write("One.md", "# One\n\nThe hangar of the zeppelin.\n")
    stack.write("Two.md", "# Two\n\nThe zeppelin hangar, and a balloon.\n")
    await stack.ingest()
    _, phrase = await stack.retrieve('"zeppelin hangar"', mode=common.RETRIEVAL_MODE_LEXICAL, **NO_CONDENSE)
    assert [p.note_path for p in phrase] == ["Two.md"]
    _, excluded = await stack.retrieve("zeppelin -balloon", **NO_CONDENSE)
    assert [p.note_path for p in excluded] == ["One.md"]


@pytest.mark.parametrize(
    ("query", "options", "filters", "words"),
    [
        ("   ", {}, None, "empty"),
        ("x" * 100_000, {}, None, "characters long"),
        ("ok", {"max_passages": 51}, None, "max_passages"),
        ("ok", {"token_budget": 5}, None, "token_budget"),
        ("ok", {}, common.RetrievalFilters(folders=["../etc"]), "folder filter"),
        ("ok", {}, common.RetrievalFilters(tags=["a b"]), "tag filter"),
        ("ok", {}, common.RetrievalFilters(date_from="last week"), "date_from 'last week' is not a day"),
        ("ok", {}, common.RetrievalFilters(date_from="2026-03-01", date_to="2026-02-01"), "is after date_to"),
    ],
)
async def test_bad_requests_are_invalid_argument(stack: Stack, query, options, filters, words) -> None:
    request = pb.RetrieveRequest(query=query, options=pb.RetrieveOptions(**options), filters=filters)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        async for _ in stack.stub.Retrieve(request, timeout=30):
            pass
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert words in raised.value.details()


async def test_a_date_range_keeps_the_passages_dated_within_it_in_every_arm_and_in_note_search(stack: Stack) -> None:
    stack.write("Journal/2026-01-20.md", "# 20 January\n\nChose the quartz worktop after the showroom.\n")
    stack.write("Journal/2026-03-02.md", "# 2 March\n\nChanged the worktop to oak after all.\n")
    stack.write(
        "Log.md",
        "# Log\n\nKitchen log.\n\n## 2026-01-21\n\nThe worktop template is booked.\n\n"
        "## 2026-04-10\n\nThe worktop was fitted.\n",
    )
    await stack.ingest()
    january = common.RetrievalFilters(date_from="2026-01-01", date_to="2026-01-31")
    for mode in (common.RETRIEVAL_MODE_HYBRID, common.RETRIEVAL_MODE_LEXICAL, common.RETRIEVAL_MODE_VECTOR):
        _, passages = await stack.retrieve(
            "worktop", mode=mode, filters=january, expand_neighbours=False, **NO_CONDENSE
        )
        found = {(p.note_path, p.text.strip().splitlines()[-1]) for p in passages}
        assert found == {
            ("Journal/2026-01-20.md", "Chose the quartz worktop after the showroom."),
            ("Log.md", "The worktop template is booked."),
        }, (mode, found)
    # Open ends: from March on.
    _, later = await stack.retrieve("worktop", filters=common.RetrievalFilters(date_from="2026-03-01"), **NO_CONDENSE)
    assert {p.note_path for p in later} == {"Journal/2026-03-02.md", "Log.md"}
    assert all("template" not in p.text for p in later if p.note_path == "Log.md")
    # Note search lists a note with a passage in the range.
    for mode in (pb.SEARCH_MODE_KEYWORD, pb.SEARCH_MODE_HYBRID):
        found = await stack.stub.Search(pb.SearchRequest(query="worktop", mode=mode, filters=january), timeout=30)
        assert {hit.path for hit in found.hits} == {"Journal/2026-01-20.md", "Log.md"}


async def test_last_week_in_the_question_finds_that_weeks_note_as_of_the_askers_now(stack: Stack) -> None:
    stack.write("Journal/2026-11-10.md", "# 10 November\n\nWe decided on a quartz worktop for the kitchen.\n")
    stack.write("Journal/2026-11-25.md", "# 25 November\n\nWe decided on an oak worktop for the kitchen instead.\n")
    stack.write("Journal/2026-11-29.md", "# 29 November\n\nA walk by the river.\n")
    await stack.ingest()
    question = "What did we decide about the worktop last week?"
    plan, passages = await stack.retrieve(question, **NO_CONDENSE, now="2026-11-30T18:00:00+00:00")
    assert passages[0].note_path == "Journal/2026-11-25.md"
    assert (passages[0].date, passages[0].date_source) == ("2026-11-25", "file name")
    assert plan.time == "Notes dated 23\u201329 November 2026" and plan.dated_range
    assert plan.queries[0].text == "What did we decide about the worktop?", "the time's words are not searched"
    undated_plan, _ = await stack.retrieve("What did we decide about the worktop?", **NO_CONDENSE)
    assert not undated_plan.time and not undated_plan.dated_range
    # The same words asked two weeks earlier mean another week.
    _, earlier = await stack.retrieve(question, **NO_CONDENSE, now="2026-11-16T09:00:00+00:00")
    assert earlier[0].note_path == "Journal/2026-11-10.md"
    # Nothing dated then: every note is searched, and the plan says so.
    plan, anywhere = await stack.retrieve(
        "What did we decide about the worktop in March?", **NO_CONDENSE, now="2026-11-30T18:00:00+00:00"
    )
    assert anywhere and "no note dated then matches, so every note was searched" in plan.time
    assert not plan.dated_range, "the range gave way to every note"
    latest, _ = await stack.retrieve("my latest note on the worktop", **NO_CONDENSE, now="2026-11-30T18:00:00+00:00")
    assert latest.time == "Latest first" and not latest.dated_range, "latest names no days"
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stack.retrieve(question, **NO_CONDENSE, now="2026-11-30 18:00")
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "UTC offset" in raised.value.details()


async def test_a_time_named_by_events_is_the_days_the_notes_give_them(stack: Stack) -> None:
    stack.write("Journal/2026-01-05.md", "# 5 January\n\nWe bought paint for the hall.\n")
    stack.write("Journal/2026-01-12.md", "# 12 January\n\nThe showroom visit with Marta: we chose quartz.\n")
    stack.write("Journal/2026-02-01.md", "# 1 February\n\nWe bought tiles for the kitchen.\n")
    stack.write("Journal/2026-02-20.md", "# 20 February\n\nThe electrician started on the wiring.\n")
    stack.write("Journal/2026-03-01.md", "# 1 March\n\nWe bought a lamp for the hall.\n")
    stack.write("Showrooms.md", "# Showrooms\n\nA list of every showroom worth a visit.\n")
    await stack.ingest()
    now = "2026-03-10T10:00:00+00:00"
    plan, passages = await stack.retrieve("What did we buy since the showroom visit?", **NO_CONDENSE, now=now)
    found = [p.note_path for p in passages]
    assert found[0] in ("Journal/2026-02-01.md", "Journal/2026-03-01.md") and "Journal/2026-01-05.md" not in found
    assert plan.time == "Notes dated 12 January to 10 March 2026 (the showroom visit, 12 January 2026)"
    assert plan.queries[0].text == "What did we buy?"
    plan, passages = await stack.retrieve(
        "What did we buy between the showroom visit and the electrician's first day?", **NO_CONDENSE, now=now
    )
    assert [p.note_path for p in passages] == ["Journal/2026-02-01.md"], plan.time
    assert plan.time == (
        "Notes dated 13 January to 19 February 2026 (the showroom visit, 12 January 2026; the electrician's first "
        "day, 20 February 2026)"
    )
    # An event the notes do not date is no time: the question is searched as asked.
    plan, _ = await stack.retrieve("What did we buy after the moon landing?", **NO_CONDENSE, now=now)
    assert plan.queries[0].text == "What did we buy after the moon landing?" and not plan.time
    # Nor is one the notes date after the asker's now: what they tell of has happened.
    plan, _ = await stack.retrieve(
        "What did we buy after the electrician started?", **NO_CONDENSE, now="2026-02-10T10:00:00+00:00"
    )
    assert not plan.time, plan.time
    # A passage that says when the event is gives its day, not its own: entering a race in March tells of November.
    stack.write("Journal/2026-03-28.md", "# 28 March\n\nEntered the Porto half marathon: 8 November, 35 euros.\n")
    stack.write("Journal/2026-04-02.md", "# 2 April\n\nPasta with Marta at the new place.\n")
    stack.write("Journal/2026-11-08.md", "# 8 November\n\nRace day, 2:03 at the finish. Pasta with Marta after.\n")
    await stack.ingest()
    plan, passages = await stack.retrieve(
        "Where did we eat after the porto half?", **NO_CONDENSE, now="2026-11-20T10:00:00+00:00"
    )
    assert plan.time == "Notes dated 8\u201320 November 2026 (the porto half, 8 November 2026)"
    assert [p.note_path for p in passages] == ["Journal/2026-11-08.md"]
    # No note of the days an event names: every note is searched, and the event's words with them.
    question = "Where did we eat the day after the porto half?"
    plan, passages = await stack.retrieve(question, **NO_CONDENSE, now="2026-11-20T10:00:00+00:00")
    assert plan.time.startswith("Notes dated 9 November 2026 (the porto half, 8 November 2026): no note dated then")
    assert plan.queries[0].text == question
    assert "Journal/2026-11-08.md" in [p.note_path for p in passages[:2]]


async def test_sql_and_tsquery_syntax_in_queries_is_just_text(stack: Stack) -> None:
    stack.write("Plan.md", "# Plan\n\nWe chose PostgreSQL.\n")
    await stack.ingest()
    for query in ["'; DROP TABLE vault_chunks; --", "a & b | !c:* (", '"unbalanced', "%_\\", "-"]:
        plan, _ = await stack.retrieve(query, **NO_CONDENSE)
        assert plan.queries[0].text
    _, passages = await stack.retrieve("PostgreSQL", **NO_CONDENSE)
    assert passages, "the table is still there"


async def test_search_rpc_finds_notes(stack: Stack) -> None:
    stack.write("Projects/Plan.md", "---\ntags: [project]\n---\n# Plan\n\nWe chose PostgreSQL with pgvector.\n")
    await stack.ingest()
    response = await stack.stub.Search(pb.SearchRequest(query="pgvector", mode=pb.SEARCH_MODE_HYBRID))
    assert [hit.path for hit in response.hits] == ["Projects/Plan.md"]
    assert response.vector_arm_ran
