"""The extractive provider: quotes the best-matching sentences with their [n], and says it is quoting."""

from __future__ import annotations

import dataclasses
import re

from hypothesis import given
from hypothesis import strategies as st

from secondbrain.llm import ChatMessage, ChatRequest, SourcePassage, TextDelta, Usage, extractive
from secondbrain.llm.extractive import PREAMBLE, ExtractiveProvider, best_sentences, is_about_the_vault
from secondbrain.llm.quote_units import sentences
from secondbrain.llm.quote_words import content_words, identifiers

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
    assert "> We chose PostgreSQL with pgvector as the vector store. It runs anywhere. [2]" in text
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
    assert [s.text for s in best_sentences("storage", [passage])] == ["Storage is PostgreSQL because storage matters."]


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


def chosen(question: str, passages: list[SourcePassage], earlier: list[str] | None = None) -> list[str]:
    """The statements chosen for the question's words, without the context each is quoted with."""
    return [quote.unit.text for quote in best_sentences(question, passages, earlier or []) if quote.unit is not None]


def quoted(question: str, passages: list[SourcePassage], earlier: list[str] | None = None) -> list[str]:
    """What the answer quotes: each chosen statement with its context."""
    return [quote.text for quote in best_sentences(question, passages, earlier or [])]


def test_a_hard_wrapped_paragraph_is_quoted_in_whole_sentences() -> None:
    assert chosen("When can Rui start the electrics?", [JOURNAL]) == ["Rui can start the electrics on 3 February."]
    assert chosen("tile the ceiling", [JOURNAL]) == [
        "We agreed to tile only behind the hob and the sink, not up to the ceiling: it saves about 600 euros."
    ]
    # Quoted with the rest of its short paragraph, lines joined.
    assert quoted("When can Rui start the electrics?", [JOURNAL]) == [
        "Marta and I measured the kitchen wall again. We agreed to tile only behind the hob and the sink, not up to "
        "the ceiling: it saves about 600 euros. Rui can start the electrics on 3 February."
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
    assert chosen("How often is watering needed?", [garden]) == ["We watered the seedlings daily."]
    assert chosen("What was the decision?", [garden]) == ["Decided on raised beds in January."]
    assert chosen("And what about the tiles?", [KITCHEN, JOURNAL]) == [
        "We agreed to tile only behind the hob and the sink, not up to the ceiling: it saves about 600 euros."
    ]


def test_quotes_cover_the_question_without_repeats_or_filler() -> None:
    notes = SourcePassage(
        1,
        "The greenhouse heater runs on propane. The greenhouse was built in 2019. The greenhouse is 4 m long.\n\n"
        "## Fuel\n\nPropane is delivered by Gaz Nord every March.",
        "Greenhouse",
    )
    copy = SourcePassage(2, "The greenhouse heater runs on propane, they say.", "Copied note")
    question = "Which fuel delivery does the greenhouse heater need?"
    # One statement covers greenhouse and heater; the other greenhouse sentences add nothing; the copy repeats it;
    # the delivery sentence adds "delivered".
    assert chosen(question, [notes, copy]) == [
        "The greenhouse heater runs on propane.",
        "Propane is delivered by Gaz Nord every March.",
    ]
    # The first is quoted with the rest of its short paragraph.
    assert quoted(question, [notes, copy]) == [
        "The greenhouse heater runs on propane. The greenhouse was built in 2019. The greenhouse is 4 m long.",
        "Propane is delivered by Gaz Nord every March.",
    ]
    # Asked who, the statement naming someone answers first, its context after it.
    assert chosen("Who delivers the propane for the greenhouse heater?", [notes, copy]) == [
        "Propane is delivered by Gaz Nord every March.",
        "The greenhouse heater runs on propane.",
    ]
    # In one section, the second statement is the first one's context: one quote, nothing said twice.
    together = SourcePassage(1, notes.text.replace("## Fuel\n\n", ""), "Greenhouse")
    assert quoted(question, [together, copy]) == [
        "The greenhouse heater runs on propane. The greenhouse was built in 2019. The greenhouse is 4 m long.\n\n"
        "Propane is delivered by Gaz Nord every March."
    ]
    # A question of three words or more is not answered by a passage the search ranked lower that shares one word.
    beds = SourcePassage(2, "The basil needs less water unless it is very hot.", "Vegetable Beds")
    bread = SourcePassage(1, "Bake in a lidded pot at 250 °C for 20 minutes.", "Sourdough Bread")
    # The bread note answers it ("hot" asks for a temperature, which its 250 °C is), the basil note not at all.
    assert quoted("How hot should the oven be for bread?", [bread, beds]) == [bread.text]


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
    assert chosen("Tiles up to the ceiling?", [KITCHEN, JOURNAL]) == [
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
    # Nor is what it already had quoted again as the context of a new quote.
    stay = SourcePassage(1, "Lisbon Trip\n\nWe stay in a flat in Alfama. The flat costs 820 euros for the week.")
    assert quoted("How much does the flat cost?", [stay]) == [
        "We stay in a flat in Alfama. The flat costs 820 euros for the week."
    ]
    assert quoted("How much does the flat cost?", [stay], ["> We stay in a flat in Alfama. [1]"]) == [
        "The flat costs 820 euros for the week."
    ]


def test_code_is_not_chosen_and_link_definitions_are_not_statements() -> None:
    passage = SourcePassage(
        1, "Backups\n\n```sh\nrestic backup --repo nas:/backups\n```\n\nBackups run nightly to the NAS."
    )
    assert quoted("How do backups reach the NAS?", [passage]) == ["Backups run nightly to the NAS."]
    links = SourcePassage(1, "Backups run nightly.\n\n[restic docs]: https://restic.readthedocs.io/backups/nightly")
    assert chosen("restic backups nightly docs", [links]) == ["Backups run nightly."]


def test_the_search_order_is_evidence() -> None:
    rye = SourcePassage(1, "Feed the starter with rye flour every evening.", "Starter")
    wheat = SourcePassage(2, "Feed the starter with wheat flour every morning.", "Bread")
    # Both say the same words of the question: the one of the passage the search ranked higher is quoted.
    assert chosen("What flour do I feed the starter?", [rye, wheat]) == [rye.text]
    assert chosen("What flour do I feed the starter?", [wheat, rye]) == [wheat.text]
    # The first quote comes from [1] when a sentence of [1] answers, though [2] says more of the question.
    bakes = SourcePassage(1, "Bakes happen on Saturday mornings.", "Bread")
    fridge = SourcePassage(2, "The rye starter keeps for a week in the fridge between bakes.", "Starter")
    question = "Does the rye starter keep in the fridge between bakes?"
    assert chosen(question, [bakes, fridge]) == [bakes.text, fridge.text]
    assert chosen(question, [fridge, bakes]) == [fridge.text]
    # Asked how long, the statement holding a span answers first, whatever its passage's place (`quote_slots`).
    assert chosen("How long does the rye starter keep in the fridge between bakes?", [bakes, fridge]) == [fridge.text]


def test_a_later_quote_that_adds_little_is_left_out() -> None:
    heater = SourcePassage(1, "The greenhouse heater runs on propane from Gaz Nord, refilled each March.", "Greenhouse")
    paint = SourcePassage(8, "The greenhouse is painted green every summer.", "Paint")
    cats = [SourcePassage(n, f"Unrelated note number {n} about cats.", f"Cats {n}") for n in range(2, 8)]
    question = "Who refills the propane of the greenhouse heater, and is it painted?"
    # Ranked second, the sentence on paint is worth its one new word; ranked eighth, next to a first quote that
    # answers most of the question, it is filler.
    assert chosen(question, [heater, paint]) == [heater.text, paint.text]
    assert chosen(question, [heater, *cats, paint]) == [heater.text]


def test_a_sentence_is_quoted_with_the_sentences_around_it_that_speak_of_the_question() -> None:
    long_sentence = "The museum has " + ", ".join(f"room {n} with paintings" for n in range(1, 12)) + "."
    passage = SourcePassage(
        1,
        f"Visit\n\nThe Gulbenkian museum opens at ten. {long_sentence} The museum is closed on Tuesdays.\n\n"
        "The garden around it is free. Coffee is good there.",
        "Lisbon Trip",
    )
    # The paragraph is too long to quote whole: the chosen sentence comes with its neighbours that also say "museum",
    # up to the window's size, and nothing of the next paragraph, which does not.
    [quote] = quoted("When is the museum closed?", [passage])
    assert quote.endswith("The museum is closed on Tuesdays."), quote
    assert "garden" not in quote
    assert len(quote) <= extractive.WINDOW_CHARS


def test_overlapping_chunks_of_a_note_are_not_quoted_twice() -> None:
    installed = "The boiler was installed in 2015 by a firm from Porto that has since closed its doors for good, sadly."
    serviced = "The boiler is serviced every October."
    first = SourcePassage(
        1,
        f"Boiler\n\n{installed} The boiler pressure should stay near 1.5 bar. {serviced}",
        "Boiler",
        "House/Boiler.md",
    )
    # The next chunk of the same note starts with the last sentence of the first (the chunks overlap).
    second = SourcePassage(2, f"{serviced} The boiler service costs 90 euros.", "Boiler", "House/Boiler.md")
    assert quoted("What does the boiler service cost and when is the boiler serviced?", [first, second]) == [
        f"{installed} The boiler pressure should stay near 1.5 bar. {serviced}",
        "The boiler service costs 90 euros.",
    ]


def test_a_sentence_ending_with_a_colon_is_quoted_with_what_it_introduces() -> None:
    notes = SourcePassage(
        1,
        "Lists\n\nA linked list is built with an enum and a box:\n\n```rust\nenum List {\n    Cons(u32, Box<List>),\n"
        "    Nil,\n}\n```\n\nThe packing list has three things:\n\n- shoes for the hills\n- a rain jacket\n"
        "- the travel adapter",
        "Notes",
    )
    [quote] = best_sentences("How is a linked list built?", [notes])
    assert quote.text == "A linked list is built with an enum and a box:"
    assert quote.code == "enum List {\n    Cons(u32, Box<List>),\n    Nil,\n}" and quote.language == "rust"
    assert quoted("What is on the packing list?", [notes]) == [
        "The packing list has three things:\n\n- shoes for the hills\n- a rain jacket\n- the travel adapter"
    ]
    # A list item ending with a colon introduces the items nested under it, and only those.
    settings = SourcePassage(
        1,
        "- **Sync options** are these:\n  - sync runs every five minutes\n  - sync pauses on metered networks\n"
        "- Themes are elsewhere.",
        "Settings",
    )
    assert quoted("What sync options are there?", [settings]) == [
        "- **Sync options** are these:\n  - sync runs every five minutes\n  - sync pauses on metered networks"
    ]
    # Code too long to read in an answer is not quoted, and never cut.
    long_code = "\n".join(f"let x{n} = {n};" for n in range(40))
    long = SourcePassage(1, f"A linked list is built with an enum and a box:\n\n```rust\n{long_code}\n```", "Notes")
    [quote] = best_sentences("How is a linked list built?", [long])
    assert quote.code == "" and quote.text == "A linked list is built with an enum and a box:"


async def test_introduced_code_is_fenced_inside_the_quote() -> None:
    notes = SourcePassage(
        1, "A linked list is built with an enum and a box:\n\n```rust\nenum List { Cons(u32, Box<List>), Nil }\n```"
    )
    text, _ = await answer("How is a linked list built?", [notes])
    assert text.removeprefix(PREAMBLE).endswith(
        "\n> A linked list is built with an enum and a box: [1]\n>\n> ```rust\n"
        "> enum List { Cons(u32, Box<List>), Nil }\n> ```\n"
    ), text


async def test_a_how_to_question_gets_the_short_code_its_answer_is_followed_by() -> None:
    """The code right after the prose answering "How do I …?" is the how, quoted fenced; asked "what" or "why", the
    prose is the answer, and a block too long to quote whole is never cut."""
    code = "fn read_lines(name: &str) -> Vec<String> {\n    read_to_string(name).unwrap().lines().collect()\n}"
    notes = SourcePassage(1, f"A first attempt at reading the lines of a file.\n\n```rust\n{code}\n```")
    text, _ = await answer("How do I read the lines of a file?", [notes])
    assert text.removeprefix(PREAMBLE).endswith(
        "\n> A first attempt at reading the lines of a file. [1]\n>\n> ```rust\n"
        + "".join(f"> {line}\n" for line in code.splitlines())
        + "> ```\n"
    ), text
    text, _ = await answer("What is a first attempt at reading the lines of a file?", [notes])
    assert "```" not in text and "A first attempt at reading the lines of a file. [1]" in text
    long = SourcePassage(
        1, "A first attempt at reading the lines of a file.\n\n```rust\n" + "let x = 1;\n" * 13 + "```"
    )
    text, _ = await answer("How do I read the lines of a file?", [long])
    assert "```" not in text and "A first attempt at reading the lines of a file. [1]" in text


def test_a_how_to_question_gets_the_whole_numbered_list_of_steps() -> None:
    help_note = SourcePassage(
        1,
        "Sync\n\n## Set up sync on a new phone\n\n1. Install the app on the phone.\n2. Open settings and choose the "
        "sync tab.\n3. Sign in with your account.\n4. Pick the vault to sync.\n\n## Options\n\n- Sync runs every "
        "five minutes on the phone.\n- Sync pauses on a metered network.",
        "Sync",
    )
    assert quoted("How do I set up sync on my phone?", [help_note]) == [
        "1. Install the app on the phone.\n2. Open settings and choose the sync tab.\n3. Sign in with your account."
        "\n4. Pick the vault to sync."
    ]
    # Not a how-to question, or not a numbered list: the item alone.
    assert quoted("Which tab of the settings is sync on?", [help_note]) == ["Open settings and choose the sync tab."]
    assert quoted("How do I stop sync pausing on a metered network?", [help_note]) == [
        "Sync pauses on a metered network."
    ]


def test_the_questions_code_is_matched_as_written() -> None:
    assert identifiers("How do I get the {:#?} output, not {:?}?") == ["{:#?}", "{:?}"]
    assert identifiers("use Role::*; so `Role::Student` works") == ["role::student", "role::*"]
    assert identifiers("what about into_iter() and (5u32,) and x.iter()?") == ["into_iter()", "(5u32,)", "x.iter()"]
    # Words with a hyphen or an apostrophe, a letter before a colon and brackets around words are not code.
    assert identifiers("Is the multi-line version Rust's default (or not)? P: yes") == []
    debug = SourcePassage(
        1,
        "Debug\n\nDerived `Debug` output is compact. Rust also provides pretty printing with `{:#?}`.\n\n"
        "Every type in the standard library is printable with `{:?}` too.",
        "Debug",
    )
    # "?" inside inline code does not make a sentence a question, and the identifier picks the sentence.
    assert chosen("How do I pretty print with {:#?}", [debug]) == ["Rust also provides pretty printing with `{:#?}`."]


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
    for quote in best_sentences(question, passages):
        assert 1 <= quote.number <= len(passages)
        # The note's own words, in its order: lines joined and markers dropped, nothing added.
        assert words(quote.text) in words(passages[quote.number - 1].text)
        assert not quote.code or words(quote.code) in words(passages[quote.number - 1].text)


# Of two dated statements alike, the later: a plan and its revision (issue 34).
PAINT_PLAN = SourcePassage(
    1,
    "21 February 2026\n\nChose the paint for the kitchen wall: a washable matt called Chalk White.",
    date="2026-02-21",
)
PAINT_CHANGED = SourcePassage(
    2, "11 April 2026\n\nNew paint on the kitchen wall: a warm off-white called Oat Milk.", date="2026-04-11"
)
PAINT_LOG = SourcePassage(
    3,
    "House Log\n\n## 2026-02-21\n\nKitchen wall paint: Chalk White.\n\n## 2026-04-11\n\nKitchen wall paint is now "
    "Oat Milk, a warm off-white.\n\n## 2026-05-02\n\nGutters cleared.",
    date="2026-05-02",
)


def test_of_two_dated_statements_alike_the_later_is_quoted_though_ranked_lower() -> None:
    assert quoted("What paint is on the kitchen wall?", [PAINT_PLAN, PAINT_CHANGED]) == [
        "New paint on the kitchen wall: a warm off-white called Oat Milk."
    ]


def test_a_statement_dated_after_the_askers_day_does_not_supersede_what_was_true_then() -> None:
    # Asked on 1 March, April's repaint had not happened yet: February's choice is the answer.
    before = best_sentences("What paint is on the kitchen wall?", [PAINT_PLAN, PAINT_CHANGED], today="2026-03-01")
    assert before[0].text.startswith("Chose the paint"), before
    after = best_sentences("What paint is on the kitchen wall?", [PAINT_PLAN, PAINT_CHANGED], today="2026-04-11")
    assert after[0].text.startswith("New paint"), after


def test_within_days_the_asker_named_the_search_order_decides_not_the_later() -> None:
    chosen = best_sentences("What paint is on the kitchen wall?", [PAINT_PLAN, PAINT_CHANGED], later_first=False)
    assert chosen[0].text.startswith("Chose the paint"), "February was asked for"


def test_a_running_log_dates_each_statement_by_its_own_heading() -> None:
    # The log's passage ends in May, but its Chalk White line is February's: the April journal is the later.
    answer = quoted("What paint is on the kitchen wall?", [PAINT_LOG, PAINT_PLAN])
    assert answer == ["Kitchen wall paint is now Oat Milk, a warm off-white."], answer


def test_an_undated_statement_or_one_saying_less_is_not_superseded() -> None:
    undated = SourcePassage(1, "Kitchen\n\nThe kitchen wall paint is Chalk White.")
    assert quoted("What paint is on the kitchen wall?", [undated, PAINT_CHANGED])[0] == (
        "The kitchen wall paint is Chalk White."
    ), "an undated note is not known to be older"
    other = SourcePassage(2, "1 May 2026\n\nThe garden wall needs paint too.", date="2026-05-01")
    assert quoted("Which paint for the kitchen wall?", [PAINT_PLAN, other])[0].startswith("Chose the paint")


async def test_a_question_that_named_only_its_days_is_answered_by_what_those_days_say() -> None:
    day = SourcePassage(
        1,
        "Journal 2026-09-19 > 19 September 2026\n\nDrove to Sintra with Marta and walked up to the Moorish castle. "
        "Lunch in the square.\nHome by six.\n\nLater: watered the beds.",
        title="Journal 2026-09-19",
        path="Journal/2026-09-19.md",
        date="2026-09-19",
    )
    request = ChatRequest(
        model="extractive", messages=[ChatMessage("user", "What did we do last weekend?")], passages=[day],
        later_first=False,
    )  # fmt: skip
    text = "".join([event.text async for event in ExtractiveProvider().stream(request) if isinstance(event, TextDelta)])
    assert "What your notes of those days say:" in text, text
    assert "Drove to Sintra with Marta and walked up to the Moorish castle." in text and "[1]" in text
    assert "watered the beds" not in text, "the opening block, not the whole day"
    # Days not asked for: nothing shares the words, and the answer says so, naming the closest note.
    undated, _ = await answer("What did we do?", [day])
    assert "shares enough words" in undated


def test_a_sentence_too_short_to_quote_alone_is_quoted_with_the_one_before() -> None:
    """A terse journal's answer is often two words: "Calf fine." is the end of the run's sentence, not dropped."""
    log = SourcePassage(
        1,
        "Journal 2026-08-03 > 3 August 2026\n\nMonthly budget check: the loft insulation is booked.\n\n"
        "Easy 5 km, running the whole way. Calf fine.",
    )
    assert chosen("status of my calf?", [log]) == ["Easy 5 km, running the whole way. Calf fine."]


def test_a_short_opening_sentence_is_quoted_with_the_one_after() -> None:
    """Found on the fifth blind time dev set: "Sintra day." heads the day's note, and a quote without it loses what
    the day was."""
    assert sentences("Sintra day. Pena Palace at 10:00 as booked.") == ["Sintra day. Pena Palace at 10:00 as booked."]
    assert sentences("Home.") == ["Home."], "alone, it is still the note's sentence"
    assert sentences("Home. Tired. Long day at the airport.") == ["Home. Tired. Long day at the airport."]


def test_seeing_is_how_a_question_is_phrased_not_what_it_asks() -> None:
    """ "Can I see how many words my note has?" asks for the word count: a sentence about seeing the Backlinks tab
    shares "see" and "note" with it, and is not a second answer (found reading Obsidian Help's answers)."""
    count = SourcePassage(
        1, "Word count is a core plugin that displays the number of words and characters of the active note.", "Word"
    )
    backlinks = SourcePassage(
        2, "If you can't see the Backlinks tab in the active note, run the Show backlinks command.", "Backlinks"
    )
    assert chosen("Can I see how many words my note has?", [count, backlinks]) == [count.text]


def test_contractions_typed_without_apostrophes_are_function_words() -> None:
    """Typed on a phone, "whats ... im" are not words a sentence must share to answer: "race" and "training" are."""
    assert content_words("whats the next race im training for") == ["next", "race", "training"]
    assert content_words("what's the plan we're on, we'll see") == ["plan"], "no 's', 're' or 'll' left over"
    journal = SourcePassage(
        1,
        "Journal 2026-11-21 > 21 November 2026\n\nSigned up for the Lisbon half marathon in March 2027. Marta says "
        "I am addicted.\n\nLong run 10 km, easy.\n\nProper training starts in December.",
    )
    assert chosen("whats the next race im training for", [journal]) == ["Proper training starts in December."]


async def test_a_question_asking_when_has_each_quote_led_by_the_day_its_notes_give_it() -> None:
    log = SourcePassage(
        1,
        "House Log > 2026-10-25\n\nSmoke alarm batteries changed, all three.",
        "House Log",
        "Areas/Home/House Log.md",
        "2026-10-25",
    )
    text, _ = await answer("When did I last change the smoke alarm batteries?", [log])
    assert "\n25 October 2026:\n> Smoke alarm batteries changed, all three. [1]" in text
    text, _ = await answer("Which smoke alarm batteries did I change?", [log])
    assert "25 October 2026" not in text, "only a question asking when is told the day"
    undated = dataclasses.replace(log, date="", text="House Log > Alarms\n\nSmoke alarm batteries changed, all three.")
    text, _ = await answer("When did I last change the smoke alarm batteries?", [undated])
    assert "\n> Smoke alarm batteries changed" in text and "2026:" not in text, "no day the notes give: none said"
