"""The extractive provider: quotes the best-matching sentences with their [n], and says it is quoting."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from secondbrain.llm import ChatMessage, ChatRequest, SourcePassage, TextDelta, Usage
from secondbrain.llm.extractive import PREAMBLE, ExtractiveProvider, best_sentences, is_about_the_vault

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


def test_headings_and_prefixes_are_not_quoted() -> None:
    passage = SourcePassage(1, "Plan > Storage\n\n# Storage choice\n\nStorage is PostgreSQL because storage matters.")
    quoted = [s.text for s in best_sentences("storage", [passage])]
    assert quoted == ["Storage is PostgreSQL because storage matters."]


KITCHEN = SourcePassage(
    1,
    """Kitchen Renovation > Decisions

## Decisions

- **Worktop**: oak was rejected because it needs oiling every few months; we chose a 30 mm quartz composite in
  pale grey. Decided on 12 January after the showroom visit with Marta.
- **Layout**: keep the sink under the window so the plumbing does not move; the hob moves to the island.

## Open questions

- Whether to tile up to the ceiling or only behind the hob. See [[Journal/2026-01-20]].
""",
    "Kitchen Renovation",
    "Projects/Kitchen Renovation.md",
)
JOURNAL = SourcePassage(
    2,
    """Marta and I measured the kitchen wall again. We agreed to tile only behind the hob and the sink, not up to the
ceiling: it saves about 600 euros. Rui can start the
electrics on 3 February.
""",
    "Journal 2026-01-20",
    "Journal/2026-01-20.md",
)
README = SourcePassage(
    3,
    """This vault ships with secondbrain so that it has something to answer from: the kitchen renovation, a
Lisbon trip and a vegetable garden.

Ask the chat things like "When do I water the tomatoes?" or "What did we decide about the kitchen worktop?".
""",
    "Welcome to the demo vault",
    "README.md",
)


def quoted(question: str, passages: list[SourcePassage], earlier: list[str] | None = None) -> list[str]:
    return [sentence.text for sentence in best_sentences(question, passages, earlier or [])]


def test_a_hard_wrapped_paragraph_is_quoted_in_whole_sentences() -> None:
    assert quoted("When can Rui start the electrics?", [JOURNAL]) == ["Rui can start the electrics on 3 February."]
    assert quoted("tile the ceiling", [JOURNAL]) == [
        "We agreed to tile only behind the hob and the sink, not up to the ceiling: it saves about 600 euros."
    ]


def test_a_list_item_is_quoted_whole_with_its_wrapped_lines() -> None:
    assert quoted("What did we decide about the kitchen worktop?", [KITCHEN]) == [
        "**Worktop**: oak was rejected because it needs oiling every few months; we chose a 30 mm quartz composite in "
        "pale grey. Decided on 12 January after the showroom visit with Marta."
    ]


def test_a_table_row_is_quoted_whole_and_read_with_its_header() -> None:
    calendar = SourcePassage(
        1,
        "| month | sow or plant |\n|---|---|\n| March | sow broad beans outdoors |\n"
        "| April | plant potatoes; sow carrots in bed C |\n\nThe last frost is mid-May.",
        "Planting Calendar",
    )
    # "sow" is in both rows; the question's month picks the row, which is quoted as one line.
    assert quoted("What do I sow in April?", [calendar]) == ["April | plant potatoes; sow carrots in bed C"]
    assert quoted("When do I plant potatoes?", [calendar]) == ["April | plant potatoes; sow carrots in bed C"]


def test_words_match_on_their_stems() -> None:
    garden = SourcePassage(1, "We watered the seedlings daily. Decided on raised beds in January.", "Garden")
    assert quoted("How often is watering needed?", [garden]) == ["We watered the seedlings daily."]
    assert quoted("What was the decision?", [garden]) == ["Decided on raised beds in January."]
    assert quoted("And what about the tiles?", [KITCHEN, JOURNAL]) == [
        "We agreed to tile only behind the hob and the sink, not up to the ceiling: it saves about 600 euros."
    ]


def test_quotes_cover_the_question_without_repeats_or_filler() -> None:
    notes = SourcePassage(
        1,
        "The greenhouse heater runs on propane. The greenhouse was built in 2019. The greenhouse is 4 m long.\n\n"
        "Propane is delivered by Gaz Nord every March.",
        "Greenhouse",
    )
    copy = SourcePassage(2, "The greenhouse heater runs on propane, they say.", "Copied note")
    # One quote covers greenhouse and heater; the other greenhouse sentences add nothing; the copy repeats it; the
    # delivery sentence adds "delivered".
    assert quoted("Who delivers the propane for the greenhouse heater?", [notes, copy]) == [
        "The greenhouse heater runs on propane.",
        "Propane is delivered by Gaz Nord every March.",
    ]
    # A question of three words or more is not answered by a passage the search ranked lower that shares one word.
    beds = SourcePassage(2, "The basil needs less water unless it is very hot.", "Vegetable Beds")
    bread = SourcePassage(1, "Bake in a lidded pot at 250 °C for 20 minutes.", "Sourdough Bread")
    assert quoted("How hot should the oven be for bread?", [bread, beds]) == []


def test_the_vaults_own_readme_is_not_preferred_and_its_instructions_never_quoted() -> None:
    question = "What did we decide about the kitchen worktop?"
    assert quoted(question, [README, KITCHEN])[0].startswith("**Worktop**"), "the README ranks first, still last"
    # Only the README matches: its statement is quoted, its instruction to the reader never.
    assert quoted("What is the kitchen renovation?", [README]) == [
        "This vault ships with secondbrain so that it has something to answer from: the kitchen renovation, a "
        "Lisbon trip and a vegetable garden."
    ]
    assert quoted("What should I ask the chat about tomatoes?", [README]) == []


def test_a_note_about_the_vault_is_a_readme_index_or_home_at_its_root() -> None:
    assert all(is_about_the_vault(path) for path in ("README.md", "readme.md", "index.md", "Home.md"))
    assert not any(is_about_the_vault(path) for path in ("Projects/README.md", "README notes.md", "Homework.md", ""))


def test_open_questions_and_what_was_already_quoted_come_last() -> None:
    # The open question on tiling is used only when nothing answers it.
    assert quoted("Tiles up to the ceiling?", [KITCHEN]) == [
        "Whether to tile up to the ceiling or only behind the hob. See [[Journal/2026-01-20]]."
    ]
    assert quoted("Tiles up to the ceiling?", [KITCHEN, JOURNAL]) == [
        "We agreed to tile only behind the hob and the sink, not up to the ceiling: it saves about 600 euros."
    ]
    lisbon = SourcePassage(
        1,
        "Lisbon Trip > Plan\n\nWe stay in a flat in Alfama.\n\n## Budget\n\nAbout 1,600 euros, the flat is 820.",
    )
    first = quoted("Where is the flat?", [lisbon])
    assert first == ["We stay in a flat in Alfama."]
    assert quoted("How much is the flat costing us?", [lisbon], [f"> {first[0]} [1]"]) == [
        "About 1,600 euros, the flat is 820."
    ], "a follow-up is not answered with the quote it already had"


def test_code_is_not_quoted() -> None:
    passage = SourcePassage(
        1, "Backups\n\n```sh\nrestic backup --repo nas:/backups\n```\n\nBackups run nightly to the NAS."
    )
    assert quoted("How do backups reach the NAS?", [passage]) == ["Backups run nightly to the NAS."]


async def test_nothing_matching_says_so_and_names_the_closest_notes() -> None:
    passages = [
        README,  # [3], ranked first by the search
        KITCHEN,  # [1]
        SourcePassage(4, "More on the kitchen.", "Kitchen Renovation", "Projects/Kitchen Renovation.md"),
        JOURNAL,  # [2]
        SourcePassage(5, "Seven nights in May.", "Lisbon Trip", "Projects/Lisbon Trip.md"),
        SourcePassage(6, "Three runs a week.", "Running", "Areas/Health/Running.md"),
    ]
    text, _ = await answer("quantum chromodynamics", passages)
    said = text.removeprefix(PREAMBLE)
    assert said == (
        " No sentence in the 6 passages I found shares enough words with your question to quote; the closest notes"
        " are Kitchen Renovation [1], Journal 2026-01-20 [2] and Lisbon Trip [5]."
    ), "one sentence, each note once, the vault's README last"
    text, _ = await answer("quantum chromodynamics", PASSAGES[:2])
    assert text.endswith(" the closest notes are [1] and [2]."), "untitled passages are named by their number"


def words(text: str) -> str:
    return " " + " ".join(re.findall(r"[^\W_]+", text)) + " "


@given(st.text(max_size=200), st.lists(st.text(max_size=300), max_size=5))
def test_never_fails_and_cites_only_given_numbers(question: str, texts: list[str]) -> None:
    passages = [SourcePassage(n, text) for n, text in enumerate(texts, start=1)]
    for sentence in best_sentences(question, passages):
        assert 1 <= sentence.number <= len(passages)
        # The note's own words, in its order: lines joined and markers dropped, nothing added.
        assert words(sentence.text) in words(passages[sentence.number - 1].text)
