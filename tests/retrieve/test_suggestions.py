"""Suggested questions through gRPC on a real PostgreSQL (SuggestQuestions): drawn from the vault's own notes, each
answerable (asked through Retrieve, it finds its own note among the first three), varied, the same for the same
index, the most recently changed notes first."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import grpc
import pytest

from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from tests.chat.conftest import NOTES
from tests.retrieve.conftest import Stack

DEMO_VAULT = Path(__file__).resolve().parents[2] / "demo" / "vault"


def copy_demo(stack: Stack) -> None:
    for source in DEMO_VAULT.rglob("*.md"):
        relative = source.relative_to(DEMO_VAULT)
        if relative.parts[0].startswith("."):
            continue
        target = stack.vault / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


async def first_notes(stack: Stack, question: str) -> list[str]:
    """The first three notes Retrieve's passages are from, as a chat turn asks (the default options)."""
    _, passages = await stack.retrieve(question, max_passages=10)
    found: list[str] = []
    for passage in passages:
        if not passage.via_link and passage.note_path not in found:
            found.append(passage.note_path)
    return found[:3]


async def assert_answerable(stack: Stack, questions: list[pb.SuggestedQuestion]) -> None:
    for question in questions:
        assert question.note_path in await first_notes(stack, question.text), question
        note = await stack.stub.GetNote(pb.GetNoteRequest(path=question.note_path))
        # Drawn from the note: it names the note's subject or one of its headings.
        subject = note.title.split(" (")[0]
        headings = [line.lstrip("#").strip() for line in note.text.splitlines() if line.startswith("#")]
        named = [subject, *headings]
        assert any(name.lower() in question.text.lower() for name in named), (question.text, named)


async def test_the_demo_vault_s_questions_each_find_their_own_note_and_vary(stack: Stack) -> None:
    copy_demo(stack)
    await stack.ingest()
    response = await stack.stub.SuggestQuestions(pb.SuggestQuestionsRequest(limit=12))
    questions = list(response.questions)
    assert len(questions) >= 8, [q.text for q in questions]
    assert len({q.note_path for q in questions}) == len(questions), "one question per note"
    assert not any(q.note_path.startswith("Journal/") for q in questions), "a daily note's name is only its day"
    await assert_answerable(stack, questions)
    # Varied: not one template filled in twelve times.
    assert len({" ".join(q.text.split()[:3]) for q in questions}) >= 4, [q.text for q in questions]
    assert "What did I decide for the Kitchen Renovation?" in [q.text for q in questions]

    again = await stack.stub.SuggestQuestions(pb.SuggestQuestionsRequest(limit=12))
    assert list(again.questions) == questions, "the same index gives the same questions"
    default = await stack.stub.SuggestQuestions(pb.SuggestQuestionsRequest())
    assert len(default.questions) == 4

    # A note changed last comes first.
    curry = stack.vault / "Resources/Recipes/Green Curry.md"
    curry.write_text(curry.read_text(encoding="utf-8") + "\nAdd the basil at the very end.\n", encoding="utf-8")
    later = time.time() + 60
    os.utime(curry, (later, later))
    await stack.ingest()
    changed = await stack.stub.SuggestQuestions(pb.SuggestQuestionsRequest(limit=4))
    assert changed.questions[0].note_path == "Resources/Recipes/Green Curry.md", changed


async def test_the_chat_tests_notes_each_give_a_question_that_finds_them(stack: Stack) -> None:
    for path, text in NOTES.items():
        stack.write(path, text)
    await stack.ingest()
    response = await stack.stub.SuggestQuestions(pb.SuggestQuestionsRequest(limit=12))
    assert sorted(q.note_path for q in response.questions) == sorted(NOTES)
    await assert_answerable(stack, list(response.questions))


async def test_an_empty_vault_suggests_nothing_and_a_bad_limit_is_refused(stack: Stack) -> None:
    response = await stack.stub.SuggestQuestions(pb.SuggestQuestionsRequest())
    assert list(response.questions) == []
    for limit in (-1, 13):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stack.stub.SuggestQuestions(pb.SuggestQuestionsRequest(limit=limit))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "1 to 12 questions" in (refused.value.details() or "")
