"""End to end on a real vault (Obsidian's own help, from ../shared/data) with the local embedder: every note
indexed, a second sync embeds nothing, and real questions retrieve passages from the right notes."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import grpc
import pytest

from secondbrain.config import load_config
from secondbrain.db import Database
from secondbrain.ingest.server import build_ingestor, create_server
from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from secondbrain.retrieve.server import build_retriever
from secondbrain.retrieve.server import create_server as create_retrieve_server
from secondbrain.retrieve.v1 import retrieve_service_pb2 as rpb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as rpb_grpc
from secondbrain.service.runner import ServiceDeps
from secondbrain.v1 import retrieval_pb2 as common
from tests.environment import clean_environ

OBSIDIAN_HELP = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "vaults" / "obsidian-help"

# Real questions a user of this vault asks, and the note that answers each.
QUESTIONS = {
    "How do I link to a specific heading in another note?": "Linking notes and files/Internal links.md",
    "How can I bring my notes over from Evernote?": "Import notes/Import from Evernote.md",
    "What is the refund policy for licenses?": "Licenses and payment/Refund policy.md",
    "How do I give a note another name that links can use?": "Linking notes and files/Aliases.md",
    "How do I add a callout with a warning or a tip?": "Editing and formatting/Callouts.md",
}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not OBSIDIAN_HELP.is_dir(), reason=f"{OBSIDIAN_HELP} is not here"),
    pytest.mark.timeout(900),
]


async def test_obsidian_help_end_to_end_with_the_local_embedder(config, db: Database) -> None:
    # The vault is read-only shared data: configure the service for it without writing into it.
    config = load_config(vault=OBSIDIAN_HELP)
    assert config.vault.embedding.provider == "local"
    running = await create_server("127.0.0.1:0", ServiceDeps(config, db), build_ingestor(config, db))
    await running.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = pb_grpc.IngestServiceStub(channel)
            request = pb.SyncVaultRequest(vault_path=str(OBSIDIAN_HELP))
            first = [event async for event in stub.SyncVault(request, timeout=900)]
            totals = first[-1].done.totals
            # Long tables and code blocks are embedded in windows of whole rows and lines: nothing to warn about.
            warnings = [w for event in first if event.WhichOneof("event") == "file" for w in event.file.warnings]
            assert not [w for w in warnings if "embedder reads" in w], warnings
            notes = sum(1 for _ in OBSIDIAN_HELP.rglob("*.md"))
            assert totals.added == notes == totals.files_seen
            assert totals.failed == 0
            status = await stub.GetIndexStatus(pb.GetIndexStatusRequest())
            assert status.embedding_model.name == "sentence-transformers/all-MiniLM-L6-v2"
            assert status.embedding_model.dimension == 384
            assert status.chunks == status.embedded_chunks == totals.chunks_embedded > notes

            second = [event async for event in stub.SyncVault(request, timeout=120)]
            again = second[-1].done.totals
            assert (again.unchanged, again.chunks_embedded, again.added, again.updated) == (notes, 0, 0, 0)
    finally:
        await running.stop(grace=1)

    retrieve = await create_retrieve_server("127.0.0.1:0", ServiceDeps(config, db), build_retriever(config, db))
    await retrieve.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{retrieve.port}") as channel:
            stub = rpb_grpc.RetrieveServiceStub(channel)
            for question, note in QUESTIONS.items():
                request = rpb.RetrieveRequest(query=question, options=rpb.RetrieveOptions(max_passages=5))
                events = [event async for event in stub.Retrieve(request, timeout=120)]
                plan = events[0].plan
                assert plan.vector_arm_ran, plan.vector_arm_skipped_reason
                top = [e.passage.note_path for e in events if e.WhichOneof("event") == "passage"][:3]
                assert note in top, (question, top)

            # The tail of a long table (Search's operators, rows 67-80, the last three about tasks) is found by the
            # search by meaning alone, on its own: before windows, the embedder read only the table's head.
            request = rpb.RetrieveRequest(
                query="Which search operator only matches tasks that are already completed?",
                options=rpb.RetrieveOptions(
                    max_passages=5, mode=common.RETRIEVAL_MODE_VECTOR, expand_neighbours=False, condense=False
                ),
            )
            passages = [e.passage async for e in stub.Retrieve(request, timeout=120) if e.HasField("passage")]
            tail = [p for p in passages if p.note_path == "Plugins/Search.md" and "`task-done:`" in p.text]
            assert tail and tail[0].start_line > 70 and tail[0].text.startswith("| Search operator"), [
                (p.note_path, p.start_line, p.text[:80]) for p in passages
            ]
    finally:
        await retrieve.stop(grace=1)

    # The command a person types, against the same index.
    env = clean_environ()
    env.update(DATABASE_URL=config.settings.database_url or "", SECONDBRAIN_RETRIEVE_PORT="9")
    question, note = next(iter(QUESTIONS.items()))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "retrieve", question, "--json", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == 0, stderr.decode()
    result = json.loads(stdout)
    assert note in result["notes"][:3]
    assert result["passages"][0]["number"] == 1 and result["passages"][0]["text"]

    # With no API key set, `secondbrain ask` answers through the extractive provider, with citations.
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TOGETHER_API_KEY", "OPENROUTER_API_KEY", "OLLAMA_URL"):
        env.pop(variable, None)
    env["SECONDBRAIN_CHAT_PORT"] = "9"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "ask", question, "--json", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == 0, stderr.decode()
    events = [json.loads(line) for line in stdout.decode().splitlines()]
    assert [next(iter(e)) for e in (events[0], events[-1])] == ["sources", "done"]
    assert events[-1]["done"]["provider"] == "extractive"
    numbers = {p["number"] for p in events[0]["sources"]["retrieval"]["passages"]}
    answer = "".join(e["delta"]["text"] for e in events if "delta" in e)
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer)}
    assert cited and cited <= numbers, answer
