"""Condensing a chat turn into search queries, through the real SDKs against local wire servers.

What a user notices: a first question that is already specific costs no LLM call; a follow-up is rewritten so it
stands alone; a broad question gets alternate phrasings; and whatever goes wrong (no model, a slow or failing
provider, a reply that is not JSON) the raw message is searched and the plan says why.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from secondbrain.config import Config, Settings
from secondbrain.errors import ConfigError
from secondbrain.llm import ChatMessage, ChatRequest, ProviderCatalog, SourcePassage, TextDelta
from secondbrain.llm.extractive import PREAMBLE, ExtractiveProvider
from secondbrain.llm.tokens import count_tokens
from secondbrain.providers import RetryPolicy
from secondbrain.retrieve.condense import (
    HISTORY_FALLBACK_NOTE,
    MAX_ALTERNATES,
    STANDS_ALONE_BY_MODEL,
    Condensed,
    Condenser,
    PlannedQuery,
    create_condenser,
    is_broad,
    parse_reply,
)
from secondbrain.vault_config import RetrieveSection, VaultConfig
from tests.wire import AnthropicServer, OpenAIServer, Reply

SECRET = "sk-test-condense-7d6c5b4a3f2e1d0c"
FAST_RETRY = RetryPolicy(attempts=3, deadline_seconds=5, base_delay_seconds=0.01, max_delay_seconds=0.05)

HISTORY = [
    ChatMessage("user", "How did I set up the pgvector index for the notes table?"),
    ChatMessage("assistant", "You built an HNSW index with m = 16 and ef_construction = 64 [1]."),
]
FOLLOW_UP = "why those parameters?"
# With no model to rewrite it, a follow-up is searched as typed and after the turns before it, fused.
JOINED = PlannedQuery(
    "How did I set up the pgvector index for the notes table? You built an HNSW index with m = 16 and "
    "ef_construction = 64. why those parameters?",
    "with_history",
)
WITHOUT_MODEL = [PlannedQuery(FOLLOW_UP, "original"), JOINED]
# Why, in the plan: the rule of refers_back, then what was searched.
FOLLOW_UP_NOTE = f"refers back: too short to stand alone (1 content word), so {HISTORY_FALLBACK_NOTE}"


def answer(query: str, alternates: list[str] | None = None, *, delay: float = 0.0) -> Reply:
    return Reply(deltas=[json.dumps({"query": query, "alternates": alternates or []})], delay=delay)


def openai_env(server: OpenAIServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": server.base_url}


def config(**retrieve: object) -> Config:
    return Config(settings=Settings(), vault=VaultConfig(retrieve=RetrieveSection(**retrieve)))


@pytest.fixture
async def server() -> AsyncIterator[OpenAIServer]:
    async with OpenAIServer() as server:
        yield server


async def close(condenser: Condenser) -> None:
    """Closes the SDK client's pooled connections (ChatProvider has no close of its own), so none leak."""
    client = getattr(condenser.provider, "client", None)
    if client is not None:
        await client.close()


@pytest.fixture
async def condenser(server: OpenAIServer) -> AsyncIterator[Condenser]:
    catalog = ProviderCatalog.from_overrides({}, openai_env(server), retry=FAST_RETRY)
    condenser = Condenser(catalog.provider("openai"), catalog.default().model, timeout_seconds=3.0)
    yield condenser
    await close(condenser)


def prompt_of(server: OpenAIServer, number: int = 0) -> str:
    """The user message of the `number`th request: the transcript and the latest message."""
    messages = server.requests[number].json["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    return messages[1]["content"]


# --- when to call ---------------------------------------------------------------------------------------------


async def test_a_specific_first_question_is_searched_as_is_without_a_call(
    server: OpenAIServer, condenser: Condenser
) -> None:
    message = "How did I configure Postgres backups on the NAS?"
    result = await condenser.condense(message, [])
    assert result == Condensed(
        [PlannedQuery(message, "original")], "the first message of a conversation is already specific"
    )
    assert server.requests == []


async def test_a_follow_up_is_rewritten_against_the_conversation(server: OpenAIServer, condenser: Condenser) -> None:
    server.script.push(answer("why HNSW m = 16 and ef_construction = 64 for the pgvector index"))
    result = await condenser.condense(FOLLOW_UP, HISTORY)
    assert result.queries == [
        PlannedQuery("why HNSW m = 16 and ef_construction = 64 for the pgvector index", "condensed")
    ]
    assert result.skipped_reason == ""
    assert len(server.requests) == 1
    prompt = prompt_of(server)
    for text in [*(m.content for m in HISTORY), FOLLOW_UP]:
        assert text in prompt
    # Earlier turns come before the message being rewritten; alternates are left to the model's view of the
    # standalone query, since the raw follow-up says too little to judge.
    assert prompt.index(HISTORY[1].content) < prompt.index(FOLLOW_UP)
    assert "only if the standalone query is broad" in prompt


async def test_a_broad_first_question_gets_at_most_two_distinct_alternates(
    server: OpenAIServer, condenser: Condenser
) -> None:
    message = "What do my notes say about gardening?"
    server.script.push(
        answer(
            message,
            [
                "vegetable garden plans",
                "",
                "  ",
                "VEGETABLE  garden plans",
                message,
                "allotment and seedlings",
                "a third",
            ],
        )
    )
    result = await condenser.condense(message, [])
    assert result.queries == [
        PlannedQuery(message, "original"),
        PlannedQuery("vegetable garden plans", "alternate"),
        PlannedQuery("allotment and seedlings", "alternate"),
    ]
    assert result.skipped_reason == ""
    assert f"write {MAX_ALTERNATES}" in prompt_of(server)


async def test_a_first_question_keeps_the_persons_own_words_even_if_the_model_rewrites_it(
    server: OpenAIServer, condenser: Condenser
) -> None:
    server.script.push(answer("Kubernetes cluster notes", ["k8s"]))
    result = await condenser.condense("kubernetes?", [])
    assert result.queries == [PlannedQuery("kubernetes?", "original"), PlannedQuery("k8s", "alternate")]


async def test_without_alternates_none_are_asked_for_or_kept(server: OpenAIServer, condenser: Condenser) -> None:
    # A broad first message needs no call at all when alternates are off: it already stands alone.
    result = await condenser.condense("summarise my gardening notes", [], alternates=False)
    assert result.queries == [PlannedQuery("summarise my gardening notes", "original")]
    assert "alternate phrasings are off" in result.skipped_reason
    assert server.requests == []

    # A follow-up is still condensed, and alternates the model adds anyway are dropped.
    server.script.push(answer("pgvector HNSW parameters rationale", ["HNSW tuning"]))
    result = await condenser.condense(FOLLOW_UP, HISTORY, alternates=False)
    assert result.queries == [PlannedQuery("pgvector HNSW parameters rationale", "condensed")]
    assert "Alternates: none" in prompt_of(server)


async def test_condensing_off_makes_no_call(server: OpenAIServer, condenser: Condenser) -> None:
    result = await condenser.condense(FOLLOW_UP, HISTORY, condense=False)
    assert result == Condensed([PlannedQuery(FOLLOW_UP, "original")], "condensing is off")
    assert server.requests == []


async def test_a_rewrite_identical_to_the_message_is_the_original(server: OpenAIServer, condenser: Condenser) -> None:
    message = "How did I configure Postgres backups on the NAS?"
    server.script.push(answer("how did I configure postgres backups on the NAS?"))
    result = await condenser.condense(message, HISTORY)
    assert result.queries == [PlannedQuery(message, "original")]
    assert result.skipped_reason == STANDS_ALONE_BY_MODEL


async def test_a_standalone_message_after_unrelated_turns_is_asked_for_as_typed(
    server: OpenAIServer, condenser: Condenser
) -> None:
    # The model decides, with the conversation: the instructions ask for a message that stands alone unchanged.
    message = "Unrelated, but how much did the kitchen cost in the end?"
    server.script.push(answer(message))
    result = await condenser.condense(message, HISTORY)
    assert result == Condensed([PlannedQuery(message, "original")], STANDS_ALONE_BY_MODEL)
    system = server.requests[0].json["messages"][0]["content"]
    assert "return it exactly as typed: do not add the conversation's subject to it" in " ".join(system.split())
    assert HISTORY[0].content in prompt_of(server)


# --- what is sent ---------------------------------------------------------------------------------------------


async def test_a_100_kb_message_is_not_sent_whole(server: OpenAIServer, condenser: Condenser) -> None:
    message = "why does this log fail? " + "ERROR disk quota exceeded on /var/lib/postgres " * 2200
    assert len(message) > 100_000
    server.script.push(answer("postgres disk quota exceeded error"))
    result = await condenser.condense(message, HISTORY)
    assert result.queries == [PlannedQuery("postgres disk quota exceeded error", "condensed")]
    assert count_tokens(prompt_of(server)) < 2000


async def test_only_recent_history_within_the_budget_is_sent(server: OpenAIServer, condenser: Condenser) -> None:
    history = []
    for turn in range(40):
        history.append(ChatMessage("user", f"question {turn} about topic{turn}"))
        history.append(ChatMessage("assistant", f"answer {turn}: " + "details " * 150))
    server.script.push(answer("topic39 follow-up"))
    await condenser.condense("and then?", history)
    prompt = prompt_of(server)
    assert "topic39" in prompt
    assert "topic0 " not in prompt
    assert count_tokens(prompt) < 2000


# --- replies that do not fit ----------------------------------------------------------------------------------


async def test_json_in_a_fence_with_prose_is_understood(server: OpenAIServer, condenser: Condenser) -> None:
    body = json.dumps({"query": "pgvector HNSW parameters rationale", "alternates": []}, indent=2)
    server.script.push(Reply(deltas=["Sure! Here is the query:\n```json\n", body, "\n```\nHope that helps."]))
    result = await condenser.condense(FOLLOW_UP, HISTORY)
    assert result.queries == [PlannedQuery("pgvector HNSW parameters rationale", "condensed")]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("I'd rather not.", "no JSON"),
        (json.dumps({"alternates": ["x"]}), 'no "query"'),
        (json.dumps({"query": "   "}), 'no "query"'),
        (json.dumps(["pgvector"]), "not a JSON object"),
    ],
)
async def test_a_malformed_reply_falls_back_to_the_message(
    server: OpenAIServer, condenser: Condenser, reply: str, reason: str
) -> None:
    server.script.push(Reply(deltas=[reply]))
    result = await condenser.condense(FOLLOW_UP, HISTORY)
    assert result.queries == WITHOUT_MODEL
    assert result.skipped_reason.startswith("the condense call failed: ")
    assert reason in result.skipped_reason and result.skipped_reason.endswith(HISTORY_FALLBACK_NOTE)


async def test_a_failing_provider_falls_back_to_the_message(server: OpenAIServer, condenser: Condenser) -> None:
    server.script.default = Reply(status=500, error_message="upstream exploded")
    result = await condenser.condense(FOLLOW_UP, HISTORY)
    assert result.queries == WITHOUT_MODEL
    assert result.skipped_reason.startswith("the condense call failed: OpenAI is failing or overloaded (500")
    assert len(server.requests) == FAST_RETRY.attempts
    assert SECRET not in result.skipped_reason


async def test_a_slow_reply_times_out_and_the_request_is_closed(server: OpenAIServer) -> None:
    catalog = ProviderCatalog.from_overrides({}, openai_env(server), retry=FAST_RETRY)
    condenser = Condenser(catalog.provider("openai"), catalog.default().model, timeout_seconds=0.3)
    server.script.push(answer("never seen", delay=60.0))
    started = time.monotonic()
    result = await condenser.condense(FOLLOW_UP, HISTORY)
    # Not a speed claim: only that it did not wait for the server's minute.
    assert time.monotonic() - started < 30
    assert result == Condensed(WITHOUT_MODEL, f"the condense call took longer than 0.3 s; {FOLLOW_UP_NOTE}")
    for _ in range(40):
        if server.disconnects == 1:
            break
        await asyncio.sleep(0.05)
    assert server.disconnects == 1
    await close(condenser)


async def test_the_anthropic_protocol_condenses_too() -> None:
    async with AnthropicServer() as server:
        env = {"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": server.base_url}
        condenser = create_condenser(config(), env)
        server.script.push(answer("pgvector HNSW parameters rationale"))
        result = await condenser.condense(FOLLOW_UP, HISTORY)
        await close(condenser)
    assert result.queries == [PlannedQuery("pgvector HNSW parameters rationale", "condensed")]
    body = server.requests[0].json
    assert HISTORY[0].content in body["messages"][0]["content"]


# --- choosing the model ---------------------------------------------------------------------------------------


async def test_with_only_the_extractive_provider_the_reason_names_the_variables() -> None:
    condenser = create_condenser(config(), {})
    assert condenser.provider is None
    result = await condenser.condense(FOLLOW_UP, HISTORY)
    assert result.queries == WITHOUT_MODEL
    assert result.skipped_reason.startswith("no language model is available (set ")
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OLLAMA_URL"):
        assert variable in result.skipped_reason
    # The first-turn rule still holds: a specific question needs no model, so that is the reason given.
    specific = await condenser.condense("How did I configure Postgres backups on the NAS?", [])
    assert specific.skipped_reason == "the first message of a conversation is already specific"


async def test_without_a_provider_a_condenser_says_so() -> None:
    result = await Condenser(None, None).condense(FOLLOW_UP, HISTORY)
    assert result == Condensed(WITHOUT_MODEL, f"no language model is available; {FOLLOW_UP_NOTE}")


async def test_without_a_model_a_follow_up_is_joined_with_its_last_exchanges_and_long_answers_are_cut() -> None:
    long_answer = "You chose " + "quartz " * 500
    history = [
        ChatMessage("user", "first question about tiles"),
        ChatMessage("assistant", "an answer"),
        ChatMessage("user", "What did I choose for the kitchen worktop?"),
        ChatMessage("assistant", long_answer),
    ]
    result = await Condenser(None, None).condense("and its colour?", history)
    original, joined = result.queries
    assert original == PlannedQuery("and its colour?", "original") and joined.kind == "with_history"
    assert joined.text.startswith("first question about tiles an answer What did I choose")
    assert joined.text.endswith("… and its colour?")
    assert joined.text.count("quartz") < 100, "a long answer is cut to its opening"
    # A broad first message (no turns before it) has nothing to join: it is searched as typed.
    first = await Condenser(None, None).condense("kitchen", [])
    assert first.queries == [PlannedQuery("kitchen", "original")]


async def test_without_a_model_a_message_that_stands_alone_is_searched_as_typed_only() -> None:
    tomatoes = [
        ChatMessage("user", "When did I sow the tomatoes?"),
        ChatMessage("assistant", "You sowed the San Marzano tomatoes on 14 March [1]."),
    ]
    message = "How much did the kitchen renovation cost?"
    result = await Condenser(None, None).condense(message, tomatoes)
    assert result == Condensed(
        [PlannedQuery(message, "original")],
        "no language model is available; stands alone",
    )
    # The same conversation, and a message that points back into it: joined.
    follow_up = await Condenser(None, None).condense("and did they grow well in the greenhouse beds?", tomatoes)
    assert [q.kind for q in follow_up.queries] == ["original", "with_history"]
    assert follow_up.skipped_reason.endswith(f"refers back: 'they', so {HISTORY_FALLBACK_NOTE}")


async def quoted_answer(question: str, passages: list[SourcePassage]) -> str:
    """What the quoting provider answers, as a conversation stores it."""
    request = ChatRequest(model="extractive", messages=[ChatMessage("user", question)], passages=passages)
    return "".join([e.text async for e in ExtractiveProvider().stream(request) if isinstance(e, TextDelta)])


async def test_without_a_model_a_follow_up_searches_what_a_quoting_answer_quoted_not_its_own_words() -> None:
    question = "What worktop did we choose?"
    quoting = await quoted_answer(question, [SourcePassage(1, "Kitchen\n\nThe worktop is oiled oak from Costa.")])
    unmatched = await quoted_answer(question, [SourcePassage(1, "Garden\n\nTomatoes need sun.", title="Garden")])
    nothing = await quoted_answer(question, [])
    assert quoting.startswith(PREAMBLE) and "[1]" in quoting
    for answer in (quoting, unmatched, nothing):
        history = [ChatMessage("user", question), ChatMessage("assistant", answer)]
        _, joined = (await Condenser(None, None).condense("and its price?", history)).queries
        for canned in ("language model", "quoting", "passages", "[1]", "shares enough words"):
            assert canned not in joined.text, (canned, joined.text)
    history = [ChatMessage("user", question), ChatMessage("assistant", quoting)]
    _, joined = (await Condenser(None, None).condense("and its price?", history)).queries
    assert joined.text == "What worktop did we choose? The worktop is oiled oak from Costa. and its price?"
    # A quote's bold and fences are the markdown's marks, shown raw in the plan if searched (found by a user:
    # "> **Worktop**"); code's own underscores are kept.
    bold = (
        f"{PREAMBLE} The passages that best match your question say:\n> **Worktop**: oak [1]\n```rust\nfn __x__()\n```"
    )
    history = [ChatMessage("user", question), ChatMessage("assistant", bold)]
    _, joined = (await Condenser(None, None).condense("and its price?", history)).queries
    assert "*" not in joined.text and "```" not in joined.text and "Worktop" in joined.text and "__x__" in joined.text
    # The notes a "nothing matches" answer names are kept: they are what was found.
    history = [ChatMessage("user", question), ChatMessage("assistant", unmatched)]
    _, joined = (await Condenser(None, None).condense("and its price?", history)).queries
    assert "Garden" in joined.text


async def test_create_condenser_uses_the_chat_default_and_the_configured_timeout(server: OpenAIServer) -> None:
    condenser = create_condenser(config(condense_timeout_seconds=2.5), openai_env(server))
    assert condenser.provider is not None
    assert condenser.provider.id == "openai"
    assert condenser.model == ProviderCatalog.from_overrides({}, openai_env(server)).default().model
    assert condenser.timeout_seconds == 2.5
    await close(condenser)


async def test_create_condenser_honours_the_condense_provider_and_model(server: OpenAIServer) -> None:
    env = {**openai_env(server), "ANTHROPIC_API_KEY": SECRET}
    condenser = create_condenser(config(condense_provider="openai", condense_model="gpt-5.4-nano"), env)
    assert condenser.provider is not None
    assert (condenser.provider.id, condenser.model) == ("openai", "gpt-5.4-nano")
    server.script.push(answer("pgvector HNSW parameters rationale"))
    await condenser.condense(FOLLOW_UP, HISTORY)
    assert server.requests[0].json["model"] == "gpt-5.4-nano"
    await close(condenser)


async def test_a_condense_provider_without_its_key_explains_instead_of_failing() -> None:
    condenser = create_condenser(config(condense_provider="anthropic"), {})
    result = await condenser.condense(FOLLOW_UP, HISTORY)
    assert result.skipped_reason == (
        f"the condense provider Anthropic is not available (set ANTHROPIC_API_KEY); {FOLLOW_UP_NOTE}"
    )


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"condense_provider": "nope"}, "retrieve.condense_provider"),
        ({"condense_provider": "openai", "condense_model": "gpt-0"}, "retrieve.condense_model"),
    ],
)
def test_a_mistyped_provider_or_model_is_a_config_error(settings: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        create_condenser(config(**settings), {"OPENAI_API_KEY": SECRET})


# --- the broadness heuristic ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "kubernetes?",
        "What is HNSW?",
        "backup strategy",
        "What do my notes say about the garden?",
        "Summarise everything about Project Alpha's storage layer and deployment",
        "Give me an overview of my reading list for 2024",
        "tell me about the offsite",
        "What are the key decisions in the retrieval redesign?",
        "list all meetings with Dana",
        "anything on sourdough",
        "What have I written about the migration of the billing database to Postgres?",
    ],
)
def test_broad_questions(message: str) -> None:
    assert is_broad(message)


@pytest.mark.parametrize(
    "message",
    [
        "How did I configure Postgres backups on the NAS?",
        "Which port does the retrieve service listen on?",
        "What did Dana say about the Q3 budget in Tuesday's meeting?",
        "why did the ingest of Archive/2023 fail with a UTF-8 error",
        "What is the summarily dismissed clause in the lease contract?",
        "What did I note on the invoice about VAT?",
        "why those parameters for HNSW?" + " detail" * 20_000,
    ],
)
def test_specific_questions(message: str) -> None:
    assert not is_broad(message)


# --- parsing ----------------------------------------------------------------------------------------------------


@given(query=st.text(min_size=1).filter(str.strip), alternates=st.lists(st.text() | st.integers() | st.none()))
def test_parsed_alternates_are_few_distinct_nonempty_strings(query: str, alternates: list[object]) -> None:
    parsed_query, parsed = parse_reply({"query": query, "alternates": alternates})
    assert parsed_query.strip()
    assert len(parsed) <= MAX_ALTERNATES
    keys = [" ".join(text.split()).casefold() for text in [parsed_query, *parsed]]
    assert len(set(keys)) == len(keys)
    assert all(text.strip() for text in parsed)
