"""The IngestService through gRPC against a real PostgreSQL: syncs that are incremental, survive bad files, follow the
embedding model, and never leave a note half-written."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

import grpc
import pytest

from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from tests.ingest.conftest import ARCHITECTURE_NOTE, Ingest, files
from tests.wire import Reply


async def eventually_equal(read, expected: object, within: float = 10.0) -> None:
    """Poll the async `read` until it returns `expected`; fail after `within` seconds."""
    deadline = asyncio.get_running_loop().time() + within
    while (value := await read()) != expected:
        assert asyncio.get_running_loop().time() < deadline, f"still {value!r}, not {expected!r}, after {within} s"
        await asyncio.sleep(0.1)


PLAN = """---
title: Storage plan
tags: [project, storage/postgres]
aliases: [DB plan]
---
# Storage plan

We need a place for vectors. See [[Architecture#Storage|the architecture]] and ![[diagram.png]].

## Options

Option A is a dedicated vector database. Option B is PostgreSQL with pgvector. #decision

## Decision

We chose option B because it runs everywhere and keeps one database.

```python
def connect():
    return "postgresql://"
```
"""

ARCHITECTURE = ARCHITECTURE_NOTE


def long_note(paragraphs: int) -> str:
    body = "\n\n".join(
        f"Paragraph {i} talks about topic {i} in some detail, with enough words to matter for chunking. " * 4
        for i in range(paragraphs)
    )
    return f"# Long\n\n{body}\n"


async def chunks_of(ingest: Ingest, path: str) -> list[dict]:
    async with ingest.db.pool.acquire() as connection:
        rows = await connection.fetch(
            """SELECT c.chunk_index, c.heading_path, c.start_line, c.end_line, c.content,
                      vector_dims(c.embedding) AS dims
               FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id WHERE f.path = $1 ORDER BY c.chunk_index""",
            path,
        )
    return [dict(row) for row in rows]


async def test_first_sync_indexes_every_note_and_streams_progress(ingest: Ingest) -> None:
    ingest.vault.write("Projects/Plan.md", PLAN)
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    ingest.vault.write(".obsidian/workspace.md", "# not a note")
    events = await ingest.sync()
    kinds = [event.WhichOneof("event") for event in events]
    assert kinds[0] == "started" and kinds[-1] == "done" and set(kinds[1:-1]) == {"file"}
    assert events[0].started.files_seen == 2
    assert events[0].started.embedding_model.dimension == 1536
    done = files(events)
    assert set(done) == {"Projects/Plan.md", "Architecture.md"}
    assert all(f.outcome == pb.FILE_OUTCOME_ADDED for f in done.values())
    running = [event.file.totals.files_done for event in events if event.WhichOneof("event") == "file"]
    assert running == sorted(running) and running[-1] == 2
    totals = events[-1].done.totals
    assert (totals.added, totals.failed, totals.chunks_embedded) == (2, 0, len(ingest.embedded_texts()))

    plan = await chunks_of(ingest, "Projects/Plan.md")
    assert all(chunk["dims"] == 1536 for chunk in plan)
    decision = next(c for c in plan if "We chose option B" in c["content"])
    assert decision["content"].startswith("Storage plan > Decision\n\n")
    assert decision["heading_path"] == ["Decision"]
    lines = PLAN.splitlines()
    assert "We chose option B" in "\n".join(lines[decision["start_line"] - 1 : decision["end_line"]])

    async with ingest.db.pool.acquire() as connection:
        note = await connection.fetchrow("SELECT title, tags, aliases FROM vault_files WHERE path = 'Projects/Plan.md'")
        links = await connection.fetch(
            "SELECT target, heading, alias, is_embed FROM vault_links l JOIN vault_files f ON f.id = l.file_id "
            "WHERE f.path = 'Projects/Plan.md' ORDER BY ordinal"
        )
    assert note["title"] == "Storage plan"
    assert {"project", "storage/postgres", "decision"} <= set(note["tags"])
    assert note["aliases"] == ["DB plan"]
    assert [(r["target"], r["heading"], r["alias"], r["is_embed"]) for r in links] == [
        ("Architecture", "Storage", "the architecture", False),
        ("diagram.png", "", "", True),
    ]

    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    assert (status.notes, status.failed_notes) == (2, 0)
    assert status.chunks == status.embedded_chunks > 0
    assert status.embedding_model.name == "text-embedding-3-small"
    assert status.HasField("last_sync") and status.vault_path == str(ingest.vault.root)
    assert {f.path: f.state for f in status.files} == {
        "Architecture.md": pb.FILE_STATE_INDEXED,
        "Projects/Plan.md": pb.FILE_STATE_INDEXED,
    }


async def test_second_sync_embeds_nothing(ingest: Ingest) -> None:
    ingest.vault.write("Projects/Plan.md", PLAN)
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    await ingest.sync()
    before = len(ingest.embedder.requests)
    events = await ingest.sync()
    assert {f.outcome for f in files(events).values()} == {pb.FILE_OUTCOME_UNCHANGED}
    assert events[-1].done.totals.chunks_embedded == 0
    assert len(ingest.embedder.requests) == before


async def test_touched_but_unchanged_note_is_not_reembedded(ingest: Ingest) -> None:
    path = ingest.vault.write("Architecture.md", ARCHITECTURE)
    await ingest.sync()
    before = len(ingest.embedded_texts())
    stat = path.stat()
    os.utime(path, (stat.st_atime + 100, stat.st_mtime + 100))
    events = await ingest.sync()
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_UNCHANGED
    assert len(ingest.embedded_texts()) == before


async def test_editing_one_paragraph_reembeds_only_its_chunks(ingest: Ingest) -> None:
    text = long_note(40)
    ingest.vault.write("Long.md", text)
    await ingest.sync()
    chunks = await chunks_of(ingest, "Long.md")
    assert len(chunks) > 5
    before = len(ingest.embedded_texts())
    ingest.vault.write("Long.md", text.replace("Paragraph 20 talks", "Paragraph 20 now argues", 1))
    events = await ingest.sync()
    assert files(events)["Long.md"].outcome == pb.FILE_OUTCOME_UPDATED
    reembedded = ingest.embedded_texts()[before:]
    assert 1 <= len(reembedded) <= 2, "only the chunks holding the edit (one, or two where chunks overlap)"
    assert all("now argues" in text for text in reembedded)
    assert all(chunk["dims"] == 1536 for chunk in await chunks_of(ingest, "Long.md"))


async def test_deleted_note_goes_with_its_chunks(ingest: Ingest) -> None:
    path = ingest.vault.write("Architecture.md", ARCHITECTURE)
    ingest.vault.write("Projects/Plan.md", PLAN)
    await ingest.sync()
    path.unlink()
    events = await ingest.sync()
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_DELETED
    assert events[-1].done.totals.deleted == 1
    assert await chunks_of(ingest, "Architecture.md") == []
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest())
    assert status.notes == 1


async def test_ignore_globs_and_dot_folders_are_skipped(ingest: Ingest) -> None:
    ingest.vault.configure(embedding={"provider": "openai"}, ingest={"ignore": ["Archive/**", "*.excalidraw.md"]})
    ingest.vault.write("Note.md", "# Note\n\nKept.\n")
    ingest.vault.write("Archive/Old.md", "# Old\n\nIgnored.\n")
    ingest.vault.write("Drawing.excalidraw.md", "# Drawing\n\nIgnored.\n")
    ingest.vault.write(".trash/Gone.md", "# Gone\n\nIgnored.\n")
    assert set(files(await ingest.sync())) == {"Note.md"}


async def test_bad_files_fail_one_by_one_and_the_rest_goes_on(ingest: Ingest, tmp_path) -> None:
    ingest.vault.configure(embedding={"provider": "openai"}, ingest={"max_file_bytes": 100_000})
    ingest.vault.write("Good.md", ARCHITECTURE)
    (ingest.vault.root / "Binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR")
    (ingest.vault.root / "Latin1.md").write_bytes("# Café\n\nCrème brûlée.\n".encode("latin-1"))
    ingest.vault.write("Empty.md", "")
    ingest.vault.write("Huge.md", "# Huge\n\n" + "word " * 30_000)
    ingest.vault.write("Broken front matter.md", "---\ntitle: [unclosed\n---\n# Still here\n\nBody text survives.\n")
    ingest.vault.write("Nested.md", "".join("  " * depth + "- level\n" for depth in range(300)))
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret\n\nOutside the vault.\n")
    (ingest.vault.root / "Escape.md").symlink_to(outside)

    events = await ingest.sync()
    done = files(events)
    assert done["Good.md"].outcome == pb.FILE_OUTCOME_ADDED
    assert done["Nested.md"].outcome == pb.FILE_OUTCOME_ADDED
    assert done["Empty.md"].outcome == pb.FILE_OUTCOME_ADDED
    broken = done["Broken front matter.md"]
    assert broken.outcome == pb.FILE_OUTCOME_ADDED
    assert any("front matter" in warning for warning in broken.warnings)
    for path, words in [
        ("Binary.md", "binary"),
        ("Latin1.md", "UTF-8"),
        ("Huge.md", "max_file_bytes"),
        ("Escape.md", "outside the vault"),
    ]:
        assert done[path].outcome == pb.FILE_OUTCOME_FAILED, path
        assert words.lower() in done[path].error.lower(), (path, done[path].error)
    assert "Outside the vault" not in " ".join(ingest.embedded_texts())

    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    reasons = {f.path: f.reason for f in status.files if f.state == pb.FILE_STATE_FAILED}
    assert set(reasons) == {"Binary.md", "Latin1.md", "Huge.md", "Escape.md"}
    assert all(reasons.values())


async def test_a_file_that_turns_bad_keeps_its_indexed_version(ingest: Ingest) -> None:
    ingest.vault.write("Note.md", ARCHITECTURE)
    await ingest.sync()
    (ingest.vault.root / "Note.md").write_bytes(b"\x00\x01binary now")
    events = await ingest.sync()
    assert files(events)["Note.md"].outcome == pb.FILE_OUTCOME_FAILED
    assert len(await chunks_of(ingest, "Note.md")) > 0, "nothing already stored is lost"


async def test_upsert_and_delete_one_note(ingest: Ingest) -> None:
    stub = ingest.stub
    added = await stub.UpsertNote(pb.UpsertNoteRequest(path="Inbox/Idea.md", markdown="# Idea\n\nUse pgvector.\n"))
    assert added.outcome == pb.FILE_OUTCOME_ADDED and added.chunks == 1
    same = await stub.UpsertNote(pb.UpsertNoteRequest(path="Inbox/Idea.md", markdown="# Idea\n\nUse pgvector.\n"))
    assert same.outcome == pb.FILE_OUTCOME_UNCHANGED
    changed = await stub.UpsertNote(pb.UpsertNoteRequest(path="Inbox/Idea.md", markdown="# Idea\n\nUse HNSW.\n"))
    assert changed.outcome == pb.FILE_OUTCOME_UPDATED
    removed = await stub.DeleteNote(pb.DeleteNoteRequest(path="Inbox/Idea.md"))
    assert removed.chunks_removed == 1
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.DeleteNote(pb.DeleteNoteRequest(path="Inbox/Idea.md"))
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize(
    "path", ["/etc/passwd.md", "../outside.md", "a/../../b.md", "notes.txt", "", "C:\\x.md", ".obsidian/x.md"]
)
async def test_upsert_rejects_paths_outside_the_vault(ingest: Ingest, path: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await ingest.stub.UpsertNote(pb.UpsertNoteRequest(path=path, markdown="# x\n"))
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "vault-relative path" in raised.value.details()


async def test_upsert_over_the_size_limit_is_resource_exhausted(ingest: Ingest) -> None:
    await ingest.restart(embedding={"provider": "openai"}, ingest={"max_file_bytes": 100})
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await ingest.stub.UpsertNote(pb.UpsertNoteRequest(path="Big.md", markdown="x" * 101))
    assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "ingest.max_file_bytes" in raised.value.details()


async def test_switching_the_model_reembeds_everything(ingest: Ingest) -> None:
    ingest.vault.write("Projects/Plan.md", PLAN)
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    await ingest.sync()
    ingest.embedder.dimensions = 3072  # what text-embedding-3-large returns
    await ingest.restart(embedding={"provider": "openai", "model": "text-embedding-3-large"})
    events = await ingest.sync()
    assert "changed from openai:text-embedding-3-small" in events[0].started.reembed_reason
    assert {f.outcome for f in files(events).values()} == {pb.FILE_OUTCOME_UPDATED}
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest())
    assert status.embedding_model.dimension == 3072
    assert status.embedded_chunks == status.chunks
    async with ingest.db.pool.acquire() as connection:
        dims = await connection.fetch("SELECT DISTINCT vector_dims(embedding) AS d FROM vault_chunks")
    assert [row["d"] for row in dims] == [3072]


async def test_two_syncs_never_run_at_once(ingest: Ingest) -> None:
    for i in range(20):
        ingest.vault.write(f"Note {i}.md", f"# Note {i}\n\nSome text about {i}.\n")
    # The first sync's embedding request takes a second: long enough to try a second sync meanwhile.
    ingest.embedder.script.default = Reply(delay=1.0)
    first = ingest.stub.SyncVault(pb.SyncVaultRequest(vault_path=str(ingest.vault.root)))
    assert (await first.read()).WhichOneof("event") == "started", "the lock is held from here on"
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await ingest.sync()
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "already running" in raised.value.details()
    last = await first.read()
    while (event := await first.read()) is not grpc.aio.EOF:
        last = event
    assert last.done.totals.added == 20


async def test_embedder_down_stores_notes_as_pending_and_the_next_sync_embeds_them(ingest: Ingest) -> None:
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    ingest.embedder.script.default = Reply(status=503)
    events = await ingest.sync()
    failed = files(events)["Architecture.md"]
    assert failed.outcome == pb.FILE_OUTCOME_FAILED
    assert "not embedded" in failed.error
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    assert [f.state for f in status.files] == [pb.FILE_STATE_PENDING]
    assert status.embedded_chunks == 0 and status.chunks > 0, "stored, so keyword search already finds it"

    ingest.embedder.script.default = Reply()
    events = await ingest.sync()
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_UPDATED
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest())
    assert status.embedded_chunks == status.chunks > 0


async def test_personas_come_from_the_vaults_agent_definitions(ingest: Ingest) -> None:
    ingest.vault.write(
        ".claude/agents/researcher.md",
        "---\nname: Researcher\ndescription: Digs through sources and cites them.\n---\n"
        "You are a careful researcher.\n",
    )
    await ingest.sync()
    async with ingest.db.pool.acquire() as connection:
        rows = await connection.fetch("SELECT id, name, role, definition, source FROM personas ORDER BY id")
    personas = {row["id"]: dict(row) for row in rows}
    assert personas["researcher"]["name"] == "Researcher"
    assert personas["researcher"]["role"] == "Digs through sources and cites them."
    assert personas["researcher"]["definition"] == "You are a careful researcher."
    assert "assistant" in personas, "the built-in default stays"
    (ingest.vault.root / ".claude/agents/researcher.md").unlink()
    await ingest.sync()
    async with ingest.db.pool.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM personas WHERE id = 'researcher'") == 0


async def test_sync_without_a_vault_path_uses_the_configured_vault(ingest: Ingest) -> None:
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    events = [event async for event in ingest.stub.SyncVault(pb.SyncVaultRequest())]
    assert events[0].started.vault_path == str(ingest.vault.root)


async def test_sync_of_a_missing_folder_is_invalid_argument(ingest: Ingest, tmp_path) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        async for _ in ingest.stub.SyncVault(pb.SyncVaultRequest(vault_path=str(tmp_path / "nope"))):
            pass
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_contextual_enrichment_stores_a_line_per_chunk_and_embeds_it(ingest: Ingest) -> None:
    await ingest.restart(embedding={"provider": "openai", "contextualize": True, "context_provider": "openai"})
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    line = "Part of the architecture note: where secondbrain keeps its data."
    ingest.embedder.script.push(Reply(deltas=["Here you go:\n```json\n", f'{{"contexts": ["{line}"]}}', "\n```"]))
    events = await ingest.sync()
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_ADDED
    chat = [r for r in ingest.embedder.requests if r.path.endswith("/chat/completions")]
    assert len(chat) == 1, "one LLM call per changed note"
    assert any(text.startswith(line) for text in ingest.embedded_texts()), "the context is embedded with the chunk"
    async with ingest.db.pool.acquire() as connection:
        context = await connection.fetchval("SELECT context FROM vault_chunks")
        found = await connection.fetchval(
            "SELECT count(*) FROM vault_chunks WHERE tsv @@ plainto_tsquery('english', 'secondbrain keeps')"
        )
    assert context == line
    assert found == 1, "the context is indexed for keyword search"


async def test_failed_enrichment_embeds_the_note_without_context(ingest: Ingest) -> None:
    await ingest.restart(embedding={"provider": "openai", "contextualize": True, "context_provider": "openai"})
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    ingest.embedder.script.push(Reply(deltas=["Sorry, I can't help with that."]))
    events = await ingest.sync()
    done = files(events)["Architecture.md"]
    assert done.outcome == pb.FILE_OUTCOME_ADDED
    assert any("without context" in warning for warning in done.warnings)
    async with ingest.db.pool.acquire() as connection:
        assert await connection.fetchval("SELECT context FROM vault_chunks") == ""


async def test_text_search_configuration_is_a_setting(ingest: Ingest) -> None:
    ingest.vault.write("Running.md", "# Running\n\nShe was running the numbers.\n")
    await ingest.sync()
    async with ingest.db.pool.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM lexeme_stats WHERE lexeme = 'run'") == 1
    ingest.vault.configure(embedding={"provider": "openai"}, search={"text_search_config": "simple"})
    await ingest.sync()
    async with ingest.db.pool.acquire() as connection:
        lexemes = {r["lexeme"] for r in await connection.fetch("SELECT lexeme FROM lexeme_stats")}
    assert "running" in lexemes and "run" not in lexemes
    ingest.vault.configure(embedding={"provider": "openai"}, search={"text_search_config": "klingon"})
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await ingest.sync()
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "search.text_search_config" in raised.value.details()


async def test_a_sync_interval_keeps_the_index_in_step_with_no_one_calling_sync(
    ingest: Ingest, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest.vault.write("First.md", "# First\n\nThe first note.\n")
    monkeypatch.setenv("SECONDBRAIN_SYNC_INTERVAL_SECONDS", "0.3")
    await ingest.restart()

    async def notes() -> int:
        return (await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(), timeout=10)).notes

    await eventually_equal(notes, 1)
    ingest.vault.write("Second.md", "# Second\n\nA note written while the service runs.\n")
    await eventually_equal(notes, 2)


async def test_a_service_with_a_vault_refuses_to_sync_another_folder(ingest: Ingest, tmp_path) -> None:
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    await ingest.sync()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "Secret.md").write_text("# Secret\n\nNot part of the vault.\n")
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        async for _ in ingest.stub.SyncVault(pb.SyncVaultRequest(vault_path=str(elsewhere))):
            pass
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "will not sync" in (raised.value.details() or "")
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    assert [f.path for f in status.files] == ["Architecture.md"], "the index still holds the vault, untouched"


# Issue 17: a hostile vault or client. Each bad file is one failed file; the rest of the sync goes on.


def incompressible(length: int, seed: str = "") -> str:
    """`length` hex digits no compressor shortens: PostgreSQL compresses a long key before it checks the limit."""
    digits = "".join(hashlib.sha256(f"{seed}:{block}".encode()).hexdigest() for block in range(length // 64 + 1))
    return digits[:length]


async def personas(ingest: Ingest) -> dict[str, str]:
    async with ingest.db.pool.acquire() as connection:
        rows = await connection.fetch("SELECT id, definition FROM personas")
    return {row["id"]: row["definition"] for row in rows}


async def test_a_persona_symlinked_out_of_the_vault_is_not_followed(ingest: Ingest, tmp_path) -> None:
    outside = tmp_path / "passwd"
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    ingest.vault.write(".claude/agents/gardener.md", "---\nname: Gardener\n---\nSpeak as a gardener.\n")
    (ingest.vault.root / ".claude/agents/passwd.md").symlink_to(outside)
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    events = await ingest.sync()
    refused = files(events)[".claude/agents/passwd.md"]
    assert refused.outcome == pb.FILE_OUTCOME_FAILED
    assert "outside the vault" in refused.error
    stored = await personas(ingest)
    assert "passwd" not in stored, "not listed among the personas, so never sent to a model"
    assert not any("root:x:0:0" in definition for definition in stored.values())
    assert stored["gardener"] == "Speak as a gardener."
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_ADDED


async def test_a_persona_with_a_nul_byte_is_one_failed_file(ingest: Ingest) -> None:
    ingest.vault.write(".claude/agents/gardener.md", "Speak as a gardener.\n")
    (ingest.vault.root / ".claude/agents/broken.md").write_bytes(b"You are\x00 broken.\n")
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    events = await ingest.sync()
    assert events[-1].WhichOneof("event") == "done", "the sync completes"
    broken = files(events)[".claude/agents/broken.md"]
    assert broken.outcome == pb.FILE_OUTCOME_FAILED
    assert "NUL byte at byte offset 7" in broken.error
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_ADDED
    assert set(await personas(ingest)) == {"assistant", "gardener"}
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    reasons = {f.path: f.reason for f in status.files if f.state == pb.FILE_STATE_FAILED}
    assert "NUL byte" in reasons[".claude/agents/broken.md"]

    (ingest.vault.root / ".claude/agents/broken.md").write_text("You are mended.\n")
    events = await ingest.sync()
    assert ".claude/agents/broken.md" not in files(events), "a mended persona is not reported as a deleted note"
    assert (await personas(ingest))["broken"] == "You are mended."
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    assert [f.path for f in status.files] == ["Architecture.md"]


async def test_a_note_path_too_long_to_index_is_one_failed_file(ingest: Ingest) -> None:
    # Each folder name within the OS's 255-byte limit, the whole path past the 2,700 bytes a btree key can hold
    # (and not compressible below it, as a repeated word would be).
    folders = "/".join(incompressible(200, seed=str(index)) for index in range(15))
    long_path = f"{folders}/Deep note.md"
    assert len(long_path.encode()) > 2_700
    ingest.vault.write(long_path, "# Deep\n\nToo far down.\n")
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    events = await ingest.sync()
    assert events[-1].WhichOneof("event") == "done", "the sync completes"
    deep = files(events)[long_path]
    assert deep.outcome == pb.FILE_OUTCOME_FAILED
    assert "1024-byte limit" in deep.error and "shorter" in deep.error
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_ADDED
    assert len(await chunks_of(ingest, "Architecture.md")) > 0
    assert events[-1].done.totals.failed == 1


async def test_upsert_with_a_path_too_long_to_index_is_invalid_argument(ingest: Ingest) -> None:
    path = incompressible(2_997) + ".md"
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await ingest.stub.UpsertNote(pb.UpsertNoteRequest(path=path, markdown="# x\n"))
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "3000 bytes" in raised.value.details() and "1024-byte limit" in raised.value.details()


CAFE_NFC = "Caf\u00e9.md"
CAFE_NFD = "Cafe\u0301.md"


async def test_nfc_and_nfd_spellings_of_a_name_are_one_note(ingest: Ingest) -> None:
    ingest.vault.write(CAFE_NFD, "# Café\n\nWritten by macOS, which spells names decomposed.\n")
    ingest.vault.write(CAFE_NFC, "# Café\n\nThe same name, composed.\n")
    events = await ingest.sync()
    assert events[-1].WhichOneof("event") == "done"
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    assert [(f.path, f.state) for f in status.files] == [(CAFE_NFC, pb.FILE_STATE_INDEXED)]
    twin = [event.file for event in events if event.WhichOneof("event") == "file" and event.file.error]
    assert len(twin) == 1 and "Unicode" in twin[0].error


async def test_a_decomposed_file_name_is_read_from_disk_and_indexed_composed(ingest: Ingest) -> None:
    ingest.vault.write(CAFE_NFD, "# Café\n\nWritten by macOS.\n")
    events = await ingest.sync()
    assert files(events)[CAFE_NFC].outcome == pb.FILE_OUTCOME_ADDED
    assert len(await chunks_of(ingest, CAFE_NFC)) == 1
    removed = await ingest.stub.DeleteNote(pb.DeleteNoteRequest(path=CAFE_NFD))
    assert removed.chunks_removed == 1, "a client's decomposed spelling names the same note"


async def test_a_note_indexed_under_a_decomposed_name_converges_without_reembedding(ingest: Ingest) -> None:
    ingest.vault.write(CAFE_NFD, "# Café\n\nWritten by macOS.\n")
    await ingest.sync()
    async with ingest.db.pool.acquire() as connection:
        # What an earlier version stored: the name as spelled on disk.
        await connection.execute("UPDATE vault_files SET path = $1", CAFE_NFD)
    before = len(ingest.embedded_texts())
    events = await ingest.sync()
    assert {path: f.outcome for path, f in files(events).items()} == {CAFE_NFC: pb.FILE_OUTCOME_UNCHANGED}
    assert len(ingest.embedded_texts()) == before, "the stored note is renamed, not lost and re-embedded"
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    assert [f.path for f in status.files] == [CAFE_NFC]


async def test_upsert_of_both_spellings_is_one_note(ingest: Ingest) -> None:
    first = await ingest.stub.UpsertNote(pb.UpsertNoteRequest(path=CAFE_NFD, markdown="# Café\n\nOne.\n"))
    second = await ingest.stub.UpsertNote(pb.UpsertNoteRequest(path=CAFE_NFC, markdown="# Café\n\nTwo.\n"))
    assert (first.outcome, second.outcome) == (pb.FILE_OUTCOME_ADDED, pb.FILE_OUTCOME_UPDATED)
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    assert [f.path for f in status.files] == [CAFE_NFC]


# Linux lets a name be any bytes; one written in Latin-1 reaches Python with surrogate escapes ("caf\udce9.md"), which
# neither PostgreSQL nor protobuf can carry. Such a file is reported under its name with the bad bytes spelled out.


def create_raw(root: Path, relative: bytes, content: bytes) -> bytes:
    """Write `content` to the vault-relative name `relative`, taken as raw bytes (folders are created); returns the
    file's absolute name in bytes."""
    target = os.fsencode(root) + b"/" + relative
    Path(os.fsdecode(target)).parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(descriptor, content)
    finally:
        os.close(descriptor)
    return target


def rename_raw(source: bytes, target: Path) -> None:
    Path(os.fsdecode(source)).rename(target)


async def failed_reasons(ingest: Ingest) -> dict[str, str]:
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    return {f.path: f.reason for f in status.files if f.state == pb.FILE_STATE_FAILED}


async def test_a_file_name_that_is_not_utf8_is_one_failed_file(ingest: Ingest) -> None:
    latin1_name = create_raw(ingest.vault.root, b"Caf\xe9.md", b"# Cafe\n\nNamed in Latin-1.\n")
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    events = await ingest.sync()
    assert events[-1].WhichOneof("event") == "done", "the sync completes"
    done = files(events)
    latin1 = done["Caf\\xe9.md"]
    assert latin1.outcome == pb.FILE_OUTCOME_FAILED
    assert "file name is not valid UTF-8" in latin1.error and "rename it" in latin1.error
    assert done["Architecture.md"].outcome == pb.FILE_OUTCOME_ADDED
    assert len(await chunks_of(ingest, "Architecture.md")) > 0
    assert "not valid UTF-8" in (await failed_reasons(ingest))["Caf\\xe9.md"]

    rename_raw(latin1_name, ingest.vault.root / "Café.md")
    events = await ingest.sync()
    assert files(events)["Café.md"].outcome == pb.FILE_OUTCOME_ADDED, "renamed, it is indexed"
    assert await failed_reasons(ingest) == {}


async def test_notes_in_a_folder_whose_name_is_not_utf8_fail_one_by_one(ingest: Ingest) -> None:
    create_raw(ingest.vault.root, b"R\xe9sum\xe9s/Plan.md", b"# Plan\n\nIn a Latin-1 folder.\n")
    create_raw(ingest.vault.root, b"R\xe9sum\xe9s/photo.jpg", b"\xff\xd8\xff")
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    events = await ingest.sync()
    assert events[-1].WhichOneof("event") == "done", "the sync completes"
    failed = {path: f.error for path, f in files(events).items() if f.outcome == pb.FILE_OUTCOME_FAILED}
    assert list(failed) == ["R\\xe9sum\\xe9s/Plan.md"], "the note in it, not the picture"
    assert "folder name" in failed["R\\xe9sum\\xe9s/Plan.md"] and "rename it" in failed["R\\xe9sum\\xe9s/Plan.md"]
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_ADDED
    assert len(await chunks_of(ingest, "Architecture.md")) > 0


async def test_a_persona_whose_name_is_not_utf8_is_one_failed_file(ingest: Ingest) -> None:
    ingest.vault.write(".claude/agents/gardener.md", "Speak as a gardener.\n")
    create_raw(ingest.vault.root, b".claude/agents/caf\xe9.md", b"Speak as a waiter.\n")
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    events = await ingest.sync()
    assert events[-1].WhichOneof("event") == "done", "the sync completes"
    waiter = files(events)[".claude/agents/caf\\xe9.md"]
    assert waiter.outcome == pb.FILE_OUTCOME_FAILED
    assert "file name is not valid UTF-8" in waiter.error
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_ADDED
    assert set(await personas(ingest)) == {"assistant", "gardener"}
