"""The rule that decides, with no language model, whether a chat message refers back to the conversation (and is
searched joined with it) or stands alone (and is searched as typed): secondbrain.retrieve.refers_back.

What a user notices: a new question in the middle of a conversation ("How much did the kitchen cost in the end?"
after talking about tomatoes) is searched as they typed it, while "why?", "and the hotel?" or "can it take any number
of arguments?" still get the conversation's words; and the plan says which, and why.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from secondbrain.retrieve.refers_back import SHORT_CONTENT_WORDS, reference

STANDALONE = [
    "How much did the kitchen cost in the end?",
    "What did the electrician find behind the old sink?",
    "When I rename a note, do the links pointing to it get fixed automatically?",
    "A friend of mine wants to move over from Apple Notes. Can she do the import on her iPhone?",
    "How do I write a conversion into my type that can fail and hand back an error?",
    "And how do arrays differ from slices when it comes to their length?",
    "In Rust, does Foo + Bar have to give the same type as Bar + Foo when I overload +?",
    "What did I plant in the raised beds this year?",
]

REFERS_BACK = [
    ("why?", "too short to stand alone"),
    ("Why?", "too short to stand alone"),
    ("and the hotel?", "too short to stand alone"),
    ("which one is the default?", "too short to stand alone"),
    ("what about a conversion between my own types that can fail?", "'what about'"),
    ("And how about returning a closure from a function with it?", "'how about'"),
    ("does that explain the pressure problem from last winter?", "'that'"),
    ("can it be turned into a &str for free?", "'it'"),
    ("how can those threads send their results back to main?", "'those'"),
    ("if I go with the second one and later uninstall the app, what happens to my notes?", "'one'"),
    ("will my phone have the same snapshots on both devices?", "'the same'"),
    ("is there a version that fills the empty option in place instead?", "'instead'"),
    ("and how late was the flight that day?", "opens with 'and'"),
    ("what if I want the binding to stay in scope afterwards and return early?", "'afterwards'"),
    ("how would the difference fn signature look then?", "'then'"),
]


@pytest.mark.parametrize("message", STANDALONE)
def test_a_question_that_names_its_own_subject_stands_alone(message: str) -> None:
    read = reference(message)
    assert not read.refers_back, read.reason
    assert read.reason == "stands alone"


@pytest.mark.parametrize(("message", "why"), REFERS_BACK)
def test_a_question_that_points_at_the_conversation_refers_back_and_says_which_word(message: str, why: str) -> None:
    read = reference(message)
    assert read.refers_back
    assert read.reason.startswith("refers back: ") and why in read.reason


def test_opening_with_and_carries_on_only_when_the_first_sentence_names_little() -> None:
    assert reference("and for PDFs? can I make it open on a certain page of the document?").refers_back
    assert not reference("And how can I check why Obsidian is so slow to start up?").refers_back


def test_a_pronoun_after_what_it_stands_for_in_a_long_message_stands_alone_but_not_in_a_short_one() -> None:
    assert not reference(
        "So did the kitchen actually get finished by the end of March, or when was it done?"
    ).refers_back
    assert reference("how do I move it somewhere else on my disk?").refers_back


# --- open-ended input -------------------------------------------------------------------------------------------

NOUNS = ["kitchen", "worktop", "boiler", "tomatoes", "insulation", "marathon", "sourdough", "vault", "plugin",
         "closure", "iterator", "lifetime", "struct", "electrician", "invoice", "Lisbon", "Porto"]  # fmt: skip
OPENERS = ["", "ok ", "Thanks! ", "hmm, ", "Cool. ", "oh ", "Great, thanks. "]
messages = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300)


@given(messages)
def test_any_text_gets_a_decision_and_a_reason(message: str) -> None:
    read = reference(message)
    assert read.reason.startswith("refers back" if read.refers_back else "stands alone")


@given(messages, st.sampled_from(["upper", "lower", "padded"]))
def test_case_and_surrounding_space_do_not_change_the_decision(message: str, how: str) -> None:
    changed = {"upper": message.upper(), "lower": message.lower(), "padded": f"  {message}\n"}[how]
    # Case folding can change the letters themselves (the German sharp s): the rule reads casefolded text.
    if changed.casefold() == message.casefold() or how == "padded":
        assert reference(changed) == reference(message)


@given(st.sampled_from(OPENERS), st.lists(st.sampled_from(NOUNS), min_size=3, max_size=6, unique=True))
def test_a_question_naming_three_or_more_things_and_no_reference_stands_alone(opener: str, nouns: list[str]) -> None:
    message = f"{opener}What did I note about the {', the '.join(nouns[:-1])} and the {nouns[-1]}?"
    assert reference(message) == reference(f"What did I note about the {', the '.join(nouns[:-1])} and the "
                                           f"{nouns[-1]}?")  # fmt: skip
    assert not reference(message).refers_back


@given(st.sampled_from(OPENERS), st.lists(st.sampled_from(NOUNS), max_size=SHORT_CONTENT_WORDS, unique=True))
def test_a_question_naming_at_most_two_things_is_too_short_to_stand_alone(opener: str, nouns: list[str]) -> None:
    message = opener + ("and the " + " and the ".join(nouns) + "?" if nouns else "why?")
    read = reference(message)
    assert read.refers_back and "too short" in read.reason


@given(
    st.sampled_from(OPENERS),
    st.sampled_from(["it", "they", "that", "those", "this"]),
    st.lists(st.sampled_from(NOUNS), min_size=3, max_size=6, unique=True),
)
def test_a_pronoun_before_anything_it_could_stand_for_refers_back(opener: str, pronoun: str, nouns: list[str]) -> None:
    message = f"{opener}does {pronoun} work with the {' and the '.join(nouns)}?"
    assert reference(message).refers_back
    assert f"'{pronoun}'" in reference(message).reason


def test_a_message_that_shares_a_word_with_the_conversation_carries_on_its_subject() -> None:
    zip_talk = "How do I move my notes out of Evernote? Export them as a zip of ENEX files and import the zip."
    read = reference("would my databases survive with the zip method?", zip_talk)
    assert read.refers_back and read.reason == "refers back: it shares 'zip' with the conversation"
    # Stems, not spellings: "exports" is "export".
    assert "export" in reference("are the exports of my calendar kept intact?", zip_talk).reason
    # With turns about something else, the same kind of question stands alone.
    tomato_talk = "When did I sow the tomatoes? You sowed the San Marzano tomatoes on 14 March."
    assert not reference("How much did the kitchen renovation cost?", tomato_talk).refers_back


conversations = st.lists(st.sampled_from(NOUNS), max_size=8).map(lambda nouns: f"What about the {' '.join(nouns)}?")


@given(st.lists(st.sampled_from(NOUNS), min_size=3, max_size=6, unique=True), conversations)
def test_a_question_naming_its_own_subject_stands_alone_exactly_when_it_shares_no_word(
    nouns: list[str], conversation: str
) -> None:
    message = f"What did I note about the {', the '.join(nouns[:-1])} and the {nouns[-1]}?"
    shares = {n.casefold() for n in nouns} & {w.casefold() for w in conversation[len("What about the ") : -1].split()}
    assert reference(message, conversation).refers_back == bool(shares)
