"""ExportConversation through gRPC: a conversation as a markdown note, its citations links to the notes cited."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

import grpc
import pytest
import yaml

from secondbrain.chat.export import file_name
from secondbrain.chat.v1 import chat_service_pb2 as pb
from tests.chat.conftest import ChatStack
from tests.wire import Reply


async def export(stack: ChatStack, conversation_id: str) -> pb.ExportConversationResponse:
    return await stack.stub.ExportConversation(pb.ExportConversationRequest(id=conversation_id), timeout=10)


def front_matter(markdown: str) -> dict:
    match = re.match(r"---\n(.*?)\n---\n", markdown, re.DOTALL)
    assert match, markdown
    return yaml.safe_load(match.group(1))


async def test_a_conversation_is_a_note_with_its_citations_as_links(stack: ChatStack) -> None:
    conversation = await stack.conversation(title="Watering: tomatoes / basil?")
    stack.llm.script.push(Reply(deltas=["Every morning before nine [1]. The basil needs less [1, 2]."]))
    await stack.send(conversation.id, "How often do I water the tomatoes?")
    question = "And the soil?\nWhat is in the raised beds?"
    stack.llm.script.push(Reply(deltas=["Compost and loam [1]."]))
    await stack.send(conversation.id, question)
    stored = await stack.get(conversation.id)
    answers = [m for m in stored.messages if m.role == 2]  # MESSAGE_ROLE_ASSISTANT
    passages = {p.number: p for p in answers[0].sources.passages}

    started = datetime.now(UTC)
    exported = await export(stack, conversation.id)
    note = exported.markdown
    assert exported.file_name == "Watering tomatoes basil.md"
    front = front_matter(note)
    assert front["title"] == "Watering: tomatoes / basil?"
    assert front["conversation"] == conversation.id
    assert front["model"] == f"{answers[0].provider}/{answers[0].model}"
    assert datetime.fromisoformat(front["created"]) == stored.create_time.ToDatetime(UTC).replace(microsecond=0)
    assert datetime.fromisoformat(front["exported"]) >= started.replace(microsecond=0)
    assert "\n# Watering: tomatoes / basil?\n" in note
    assert "\n## How often do I water the tomatoes?\n" in note
    assert "## Question\n\n> And the soil?\n> What is in the raised beds?\n" in note, "a long question is quoted"

    def link(number: int, alias: bool = True) -> str:
        passage = passages[number]
        heading = f"#{passage.heading_path[-1]}" if passage.heading_path else ""
        target = passage.note_path.removesuffix(".md") + heading
        return f"[[{target}|{number}]]" if alias else f"[[{target}]]"

    assert f"Every morning before nine {link(1)}. The basil needs less {link(1)}, {link(2)}." in note
    assert "[1]" not in note.split("## Question")[0], "every citation of the first answer is a link"
    first = passages[1]
    lines = f"lines {first.start_line}-{first.end_line}" if first.end_line != first.start_line else "line"
    assert f"Sources:\n\n1. {link(1, alias=False)} ({lines}" in note
    assert f"\n2. {link(2, alias=False)}" in note
    # The second answer's sources are its own.
    second = {p.number: p for p in answers[1].sources.passages}
    assert second[1].note_path.removesuffix(".md") in note.split("## Question")[1]


async def test_an_answer_that_did_not_finish_says_so(stack: ChatStack) -> None:
    stack.llm.script.default = Reply(status=500)
    conversation_id, _ = await stack.ask("How often do I water the tomatoes?")
    note = (await export(stack, conversation_id)).markdown
    assert "## How often do I water the tomatoes?" in note
    assert "*(This answer did not finish" in note
    assert front_matter(note)["title"] == "How often do I water the tomatoes?"


async def test_exporting_what_is_not_there(stack: ChatStack) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await export(stack, str(uuid.uuid4()))
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await export(stack, "../../etc/passwd")
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_an_empty_conversation_is_a_note_named_by_its_day(stack: ChatStack) -> None:
    conversation = await stack.conversation()
    exported = await export(stack, conversation.id)
    day = conversation.create_time.ToDatetime(UTC).strftime("%Y-%m-%d")
    assert exported.file_name == f"Conversation of {day}.md"
    assert front_matter(exported.markdown)["model"] == []


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("Kitchen costs", "Kitchen costs.md"),
        ('What is "CON"? <a|b> #tag [[x]] ^id', "What is CON a b tag x id.md"),
        ("../../etc/passwd", "etc passwd.md"),
        ("...", "Conversation.md"),
        ("con", "con (conversation).md"),
        ("Lpt1.txt", "Lpt1.txt (conversation).md"),
        ("tab\there\x00nul", "tab here nul.md"),
        ("Cafe\u0301 notes", "Café notes.md"),
        ("word " * 40, ("word " * 20).strip() + ".md"),
    ],
)
def test_a_title_becomes_a_safe_file_name(title: str, name: str) -> None:
    assert file_name(title) == name
