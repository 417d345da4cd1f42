"""The extractive provider: quotes the best-matching sentences with their [n], and says it is quoting."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from secondbrain.llm import ChatMessage, ChatRequest, SourcePassage, TextDelta, Usage
from secondbrain.llm.extractive import PREAMBLE, ExtractiveProvider, best_sentences

PASSAGES = [
    SourcePassage(1, "Garden > Tomatoes\n\nWater tomatoes every morning in July. Mulch keeps the soil moist."),
    SourcePassage(2, "Projects > Search\n\nWe chose PostgreSQL with pgvector as the vector store. It runs anywhere."),
    SourcePassage(3, "Projects > Search > Rejected\n\nElasticsearch was rejected because it needs a JVM cluster."),
]


async def answer(question: str, passages: list[SourcePassage]) -> tuple[str, Usage]:
    request = ChatRequest(model="extractive", messages=[ChatMessage("user", question)], passages=passages)
    text, usage = "", None
    async for event in ExtractiveProvider().stream(request):
        if isinstance(event, TextDelta):
            text += event.text
        else:
            usage = event
    assert usage is not None
    return text, usage


async def test_quotes_the_matching_sentence_with_its_number() -> None:
    text, usage = await answer("Which vector store did we choose?", PASSAGES)
    assert text.startswith(PREAMBLE)
    assert "We chose PostgreSQL with pgvector as the vector store. [2]" in text
    assert "tomatoes" not in text.lower()
    assert usage.model == "extractive" and usage.output_tokens > 0


async def test_cites_only_numbers_that_exist() -> None:
    text, _ = await answer("Why was Elasticsearch rejected for search?", PASSAGES)
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", text)}
    assert cited and cited <= {p.number for p in PASSAGES}
    assert 3 in cited


async def test_no_passages_says_so() -> None:
    text, _ = await answer("Anything?", [])
    assert "found no passages" in text


async def test_no_overlap_points_at_the_top_passage() -> None:
    text, _ = await answer("quantum chromodynamics", PASSAGES)
    assert "[1]" in text and "share words" in text


def test_headings_and_prefixes_are_not_quoted() -> None:
    passage = SourcePassage(1, "Plan > Storage\n\n# Storage choice\n\nStorage is PostgreSQL because storage matters.")
    quoted = [s.text for s in best_sentences("storage", [passage])]
    assert quoted == ["Storage is PostgreSQL because storage matters."]


@given(st.text(max_size=200), st.lists(st.text(max_size=300), max_size=5))
def test_never_fails_and_cites_only_given_numbers(question: str, texts: list[str]) -> None:
    passages = [SourcePassage(n, text) for n, text in enumerate(texts, start=1)]
    for sentence in best_sentences(question, passages):
        assert 1 <= sentence.number <= len(passages)
        assert sentence.text in passages[sentence.number - 1].text
