"""A quote's day, through the real ingest, retrieve and chat services with no API key (the quoting provider answers):
each quoted statement asked "when" is led by the day of the dated heading it sits under, or its note's own day (its
file name's, its front matter's), never another section's; a note dated only by its file's modification time gives
no day at all, as the UI's DateChip shows none (issue 46, item 3)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.chat.v1 import chat_service_pb2_grpc as pb_grpc
from secondbrain.v1 import retrieval_pb2 as common
from tests.chat.conftest import kinds, text_of
from tests.chat.quoting_stack import quoting_chat

# The demo vault's running house log: a passage starting at its 6 October entry runs on to 27 November.
HOUSE_LOG = Path(__file__).resolve().parents[2] / "demo" / "vault" / "Areas" / "Home" / "House Log.md"
NOTES = {
    # Dated by its file name, no heading in it.
    "Journal/2026-05-09.md": "Fixed the garden gate latch with a new spring from the hardware shop.\n",
    # Dated by its front matter.
    "Home/Chimney.md": "---\ndate: 2026-03-15\n---\nThe chimney was swept by Senhor Abel, who found a jackdaw nest.\n",
    # Dated by nothing but its file's modification time.
    "Garden/Bench.md": "Oiled the garden bench with teak oil, two coats on a dry afternoon.\n",
}


@pytest.fixture
async def chat(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[pb_grpc.ChatServiceStub]:
    vault = tmp_path / "vault"
    (vault / "Areas" / "Home").mkdir(parents=True)
    shutil.copy(HOUSE_LOG, vault / "Areas" / "Home" / "House Log.md")
    for path, text in NOTES.items():
        (vault / path).parent.mkdir(parents=True, exist_ok=True)
        (vault / path).write_text(text, encoding="utf-8")
    async with quoting_chat(vault, tmp_path / "data", database_url, monkeypatch) as stub:
        yield stub


async def ask(chat: pb_grpc.ChatServiceStub, question: str, since: str = "") -> tuple[str, list[common.Passage]]:
    """The answer to `question` (a new conversation, nothing stored), and the passages it was given."""
    request = pb.AnswerRequest(content=question, filters=common.RetrievalFilters(date_from=since))
    events = [event async for event in chat.Answer(request, timeout=30)]
    assert kinds(events)[0] == "sources" and kinds(events)[-1] == "done", kinds(events)
    assert events[-1].done.provider == "extractive"
    return text_of(events), list(events[0].sources.retrieval.passages)


async def test_a_quote_is_labelled_with_its_own_sections_day_not_the_passages_last(
    chat: pb_grpc.ChatServiceStub,
) -> None:
    answer, passages = await ask(chat, "When is the boiler service due?", since="2026-09-01")
    log = next(p for p in passages if p.note_path == "Areas/Home/House Log.md")
    # The passage starts under "## 2026-10-06" (its heading path, not its text) and runs on to 27 November.
    assert log.date.endswith("2026-11-27") and "2026-10-06" not in log.text, (log.date, log.heading_path)
    assert "\n6 October 2026:\n> Boiler service by Sérgio, 75 euros." in answer, answer
    assert "27 November 2026" not in answer, answer


async def test_a_quote_is_labelled_with_its_notes_file_name_day(chat: pb_grpc.ChatServiceStub) -> None:
    answer, _ = await ask(chat, "When did I fix the garden gate latch?")
    assert "\n9 May 2026:\n> Fixed the garden gate latch" in answer, answer


async def test_a_quote_is_labelled_with_its_notes_front_matter_day(chat: pb_grpc.ChatServiceStub) -> None:
    answer, passages = await ask(chat, "When was the chimney swept?")
    assert next(p for p in passages if p.note_path == "Home/Chimney.md").date_source.startswith("front matter")
    assert "\n15 March 2026:\n> The chimney was swept by Senhor Abel" in answer, answer


async def test_a_note_dated_only_by_its_modification_time_gives_no_day(chat: pb_grpc.ChatServiceStub) -> None:
    answer, passages = await ask(chat, "When did I oil the garden bench?")
    bench = next(p for p in passages if p.note_path == "Garden/Bench.md")
    assert bench.date_source == "modification time" and bench.date, "dated, but only by its mtime"
    assert "\n> Oiled the garden bench with teak oil" in answer, answer
    assert ":\n> Oiled" not in answer, f"no day is said for it: {answer}"
