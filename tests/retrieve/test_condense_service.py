"""A new question in the middle of a conversation, through the real Retrieve RPC on a real PostgreSQL (issue 46, 1).

With no language model, a message is searched with the conversation's earlier turns only when it refers back to
them: "How much did the kitchen cost in the end?" after talking about tomatoes finds the kitchen, not the tomatoes,
while "and how much did they cost?" after the same talk still finds the tomato seeds. With a model, the model
decides: a message it returns unchanged is searched as typed, and the plan says it stands alone.
"""

from __future__ import annotations

import json

from secondbrain.llm import ChatMessage
from secondbrain.retrieve.condense import STANDS_ALONE_BY_MODEL, with_earlier_turns
from secondbrain.v1 import retrieval_pb2 as common
from tests.retrieve.conftest import Stack
from tests.wire import Reply

NO_CONDENSE = {"condense": False}
NOTES = {
    "Kitchen.md": "# Kitchen\n\nHow much did the kitchen renovation cost? The kitchen cost 14,380.\n",
    "Tomato seeds.md": "# Tomato seeds\n\nSan Marzano tomato seeds for the greenhouse: 3.20 a packet.\n",
    **{
        f"Garden/Greenhouse {n}.md": f"# Greenhouse {n}\n\nSan Marzano and Gardener's Delight tomatoes sown in the "
        f"greenhouse, bed {n}; which tomatoes did well.\n"
        for n in range(1, 4)
    },
}
TOMATO_TALK = [
    ("user", "Which tomatoes did I sow in the greenhouse?"),
    ("assistant", "San Marzano and Gardener's Delight tomatoes, sown in the greenhouse [1]."),
]
# Time words are left out of the questions: the time reader would take them out of the query first.
STANDALONE = "How much did the kitchen renovation cost?"


def history(turns: list[tuple[str, str]]) -> list[common.HistoryMessage]:
    roles = {"user": common.MESSAGE_ROLE_USER, "assistant": common.MESSAGE_ROLE_ASSISTANT}
    return [common.HistoryMessage(role=roles[role], content=text) for role, text in turns]


async def vault(stack: Stack) -> None:
    for path, text in NOTES.items():
        stack.write(path, text)
    await stack.ingest()


async def test_with_no_model_a_standalone_question_after_unrelated_turns_finds_its_note(stack: Stack) -> None:
    await vault(stack)
    await stack.configure(retrieve={"condense_provider": "extractive"})
    question = STANDALONE
    # What the conversation's words would find: joined with the tomato talk, the question is about tomatoes.
    joined = with_earlier_turns(question, [ChatMessage(role, text) for role, text in TOMATO_TALK])
    assert joined is not None
    _, with_tomatoes = await stack.retrieve(joined.text, **NO_CONDENSE)
    assert "tomato" in with_tomatoes[0].text.lower()

    plan, passages = await stack.retrieve(question, history=history(TOMATO_TALK))
    assert passages[0].note_path == "Kitchen.md"
    assert "14,380" in passages[0].text
    assert [(q.text, q.kind) for q in plan.queries] == [(question, common.QUERY_KIND_ORIGINAL)]
    assert plan.condense_skipped_reason.endswith("; stands alone")
    # Asked fresh, the same: the conversation before it no longer changes what it finds.
    _, fresh = await stack.retrieve(question)
    assert [p.note_path for p in fresh] == [p.note_path for p in passages]


async def test_with_no_model_a_true_follow_up_still_gets_the_history(stack: Stack) -> None:
    await vault(stack)
    await stack.configure(retrieve={"condense_provider": "extractive"})
    follow_up = "and how much did they cost?"
    _, as_typed = await stack.retrieve(follow_up, **NO_CONDENSE)
    assert as_typed[0].note_path == "Kitchen.md"  # alone, "cost" is the kitchen's word

    plan, passages = await stack.retrieve(follow_up, history=history(TOMATO_TALK))
    assert "tomato" in passages[0].text.lower()
    assert [q.kind for q in plan.queries] == [common.QUERY_KIND_ORIGINAL, common.QUERY_KIND_WITH_HISTORY]
    assert "refers back: " in plan.condense_skipped_reason
    assert "together with the turns before it" in plan.condense_skipped_reason


async def test_with_a_model_a_message_it_returns_unchanged_is_searched_as_typed(stack: Stack) -> None:
    await vault(stack)
    question = f"Unrelated, but {STANDALONE[0].lower()}{STANDALONE[1:]}"
    stack.llm.script.push(Reply(deltas=[json.dumps({"query": question, "alternates": []})]))
    plan, passages = await stack.retrieve(question, history=history(TOMATO_TALK))
    assert [(q.text, q.kind) for q in plan.queries] == [(question, common.QUERY_KIND_ORIGINAL)]
    assert plan.condense_skipped_reason == STANDS_ALONE_BY_MODEL
    assert passages[0].note_path == "Kitchen.md"
    # The model was asked, with the conversation, and told to return a standalone message as typed.
    body = next(r.json for r in stack.llm.requests if r.path.endswith("/chat/completions"))
    assert "Which tomatoes did I sow" in body["messages"][1]["content"]
    assert "return it exactly as typed" in body["messages"][0]["content"]
