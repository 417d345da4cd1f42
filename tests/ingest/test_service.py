"""The IngestService through gRPC against a real PostgreSQL: syncs that are incremental, survive bad files, follow the
embedding model, and never leave a note half-written."""

from __future__ import annotations

import asyncio
import os

import asyncpg
import grpc
import pytest

from secondbrain.ingest import store
from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from tests.ingest.conftest import ARCHITECTURE_NOTE, Ingest, chunks_of, failed_reasons, files
from tests.wire import Reply

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
    for extra in range(3):
        ingest.vault.write(f"Old/Note {extra}.md", f"# Note {extra}\n")
    await ingest.sync()
    path.unlink()
    for extra in range(3):
        (ingest.vault.root / f"Old/Note {extra}.md").unlink()
    events = await ingest.sync()
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_DELETED
    totals = events[-1].done.totals
    assert totals.deleted == 4
    # Progress is over the vault's files: deleted notes do not push it past the files seen (a probe saw 219 of 18).
    assert (totals.files_seen, totals.files_done) == (1, 1)
    running = [event.file.totals for event in events if event.WhichOneof("event") == "file"]
    assert all(step.files_done <= step.files_seen for step in running)
    assert await chunks_of(ingest, "Architecture.md") == []
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest())
    assert status.notes == 1


async def test_a_code_line_longer_than_a_chunk_is_embedded_whole_in_windows(ingest: Ingest) -> None:
    """A code block over the chunk budget (400 tokens here) is embedded in windows of whole lines; a single line
    longer than a window is cut at words into windows of its own, so none is longer than the embedder reads
    (text-embedding-3-small: 8,191 tokens) and no part of it goes unembedded."""
    ingest.vault.configure(embedding={"provider": "openai"})
    ingest.vault.write("Long.md", "# Long\n\n```\n" + "word " * 600 + "\n```\n")
    ingest.vault.write("Huge block.md", "# Huge block\n\n```\n" + "word " * 9_000 + "\n```\n")

    done = files(await ingest.sync())
    for name, least in (("Long.md", 2), ("Huge block.md", 9_000 // 400)):
        assert done[name].outcome == pb.FILE_OUTCOME_ADDED and list(done[name].warnings) == []
        assert done[name].chunks >= least


async def test_bad_files_fail_one_by_one_and_the_rest_goes_on(ingest: Ingest, tmp_path) -> None:
    ingest.vault.configure(
        embedding={"provider": "openai"}, ingest={"max_file_bytes": 100_000, "max_chunks_per_note": 50}
    )
    ingest.vault.write("Good.md", ARCHITECTURE)
    (ingest.vault.root / "Binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR")
    (ingest.vault.root / "Latin1.md").write_bytes("# Café\n\nCrème brûlée.\n".encode("latin-1"))
    ingest.vault.write("Empty.md", "")
    ingest.vault.write("Huge.md", "# Huge\n\n" + "word " * 30_000)
    # Small, but each one-line section is a chunk of its own: 60 of them, over the limit of 50.
    ingest.vault.write("Sections.md", "".join(f"# h{i}\nx\n" for i in range(60)))
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
        ("Sections.md", "max_chunks_per_note"),
        ("Escape.md", "outside the vault"),
    ]:
        assert done[path].outcome == pb.FILE_OUTCOME_FAILED, path
        assert words.lower() in done[path].error.lower(), (path, done[path].error)
    assert "Outside the vault" not in " ".join(ingest.embedded_texts())

    reasons = await failed_reasons(ingest)
    assert set(reasons) == {"Binary.md", "Latin1.md", "Huge.md", "Sections.md", "Escape.md"}
    assert all(reasons.values())


@pytest.mark.parametrize("refused", ["the note", "every write of its path"])
async def test_a_note_the_database_refuses_fails_alone_and_the_sync_goes_on(ingest: Ingest, refused: str) -> None:
    # The database refuses one note (as a write past its statement timeout was: the worker died of it, its queue row
    # was left claimed, and the sync never ended). Refusing even the record of its failure, the worker still finishes
    # the row as failed.
    status = "'failed'" if refused == "the note" else "''"
    async with ingest.db.pool.acquire() as connection:
        await connection.execute(
            f"""CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
               BEGIN IF NEW.path = 'Poison.md' AND NEW.status <> {status} THEN RAISE EXCEPTION 'refused for the test';
               END IF; RETURN NEW; END $$;
               CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON vault_files
                   FOR EACH ROW EXECUTE FUNCTION refuse_poison();"""
        )
    ingest.vault.write("Good.md", ARCHITECTURE)
    ingest.vault.write("Poison.md", PLAN)
    events = await asyncio.wait_for(ingest.sync(), 60)
    done = files(events)
    assert done["Good.md"].outcome == pb.FILE_OUTCOME_ADDED
    assert done["Poison.md"].outcome == pb.FILE_OUTCOME_FAILED
    assert ("refused for the test" if refused == "the note" else "RaiseError") in done["Poison.md"].error
    finished = events[-1].done.totals
    assert (finished.added, finished.failed, finished.files_done) == (1, 1, 2)
    assert await chunks_of(ingest, "Poison.md") == []


async def test_a_note_colliding_with_another_writer_is_stored_on_a_second_try(ingest: Ingest) -> None:
    # A deadlock or a serialization failure is another writer's doing, not the note's: one more try stores it. (A
    # sequence is not rolled back with the transaction, so it counts the tries.)
    async with ingest.db.pool.acquire() as connection:
        await connection.execute(
            """CREATE SEQUENCE tries;
               CREATE FUNCTION collide_once() RETURNS trigger LANGUAGE plpgsql AS $$
               BEGIN IF NEW.path = 'Busy.md' AND nextval('tries') = 1 THEN
                   RAISE EXCEPTION 'deadlock detected' USING ERRCODE = 'deadlock_detected'; END IF;
               RETURN NEW; END $$;
               CREATE TRIGGER collide_once BEFORE INSERT ON vault_files FOR EACH ROW EXECUTE FUNCTION collide_once();"""
        )
    ingest.vault.write("Busy.md", PLAN)
    assert files(await ingest.sync())["Busy.md"].outcome == pb.FILE_OUTCOME_ADDED
    assert len(await chunks_of(ingest, "Busy.md")) > 0


async def test_an_upsert_the_database_gives_up_on_says_so(ingest: Ingest) -> None:
    # The database cancelling the write (its statement timeout) was an INTERNAL error with nothing to act on.
    async with ingest.db.pool.acquire() as connection:
        await connection.execute(
            """CREATE FUNCTION too_slow() RETURNS trigger LANGUAGE plpgsql AS $$
               BEGIN RAISE EXCEPTION 'canceling statement due to statement timeout' USING ERRCODE = 'query_canceled';
               END $$;
               CREATE TRIGGER too_slow BEFORE INSERT ON vault_chunks FOR EACH ROW EXECUTE FUNCTION too_slow();"""
        )
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await ingest.stub.UpsertNote(pb.UpsertNoteRequest(path="Slow.md", markdown=PLAN))
    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "gave up on this request" in raised.value.details() and "fewer chunks" in raised.value.details()
    assert await chunks_of(ingest, "Slow.md") == []


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


async def test_upsert_of_a_note_with_too_many_chunks_is_refused_and_keeps_the_stored_version(ingest: Ingest) -> None:
    await ingest.restart(embedding={"provider": "openai"}, ingest={"max_chunks_per_note": 50})
    await ingest.stub.UpsertNote(pb.UpsertNoteRequest(path="Log.md", markdown=ARCHITECTURE))
    stored = await chunks_of(ingest, "Log.md")
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        sections = "".join(f"# h{i}\nx\n" for i in range(60))
        await ingest.stub.UpsertNote(pb.UpsertNoteRequest(path="Log.md", markdown=sections))
    assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "more than 50 chunks" in raised.value.details()
    assert "ingest.max_chunks_per_note" in raised.value.details()
    assert await chunks_of(ingest, "Log.md") == stored, "nothing already stored is lost"


async def test_a_limit_lowered_since_a_note_was_indexed_refuses_only_its_next_version(ingest: Ingest) -> None:
    sections = "".join(f"# h{i}\nx\n" for i in range(60))
    ingest.vault.write("Log.md", sections)
    assert files(await ingest.sync())["Log.md"].outcome == pb.FILE_OUTCOME_ADDED
    await ingest.restart(embedding={"provider": "openai"}, ingest={"max_chunks_per_note": 50})
    ingest.vault.configure(embedding={"provider": "openai"}, ingest={"max_chunks_per_note": 50})
    # Touched, not changed: still the note indexed, over the sync and UpsertNote alike.
    os.utime(ingest.vault.root / "Log.md")
    assert files(await ingest.sync())["Log.md"].outcome == pb.FILE_OUTCOME_UNCHANGED
    same = await ingest.stub.UpsertNote(pb.UpsertNoteRequest(path="Log.md", markdown=sections))
    assert same.outcome == pb.FILE_OUTCOME_UNCHANGED
    # Its next version is refused, and the one indexed stays.
    ingest.vault.write("Log.md", sections + "# h60\nx\n")
    assert files(await ingest.sync())["Log.md"].outcome == pb.FILE_OUTCOME_FAILED
    assert len(await chunks_of(ingest, "Log.md")) == 60


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


async def test_an_index_chunked_by_another_version_is_chunked_again_keeping_its_vectors(ingest: Ingest) -> None:
    """A new chunker (long fences in windows, say) reaches notes stored before it: each is read and chunked again,
    and only chunks whose text changed are embedded."""
    long_fence = "# Long\n\n```\n" + "".join(f"step_{i} = run({i})\n" for i in range(200)) + "```\n"
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    ingest.vault.write("Long.md", long_fence)
    await ingest.sync()
    async with ingest.db.pool.acquire() as connection:
        # As an index from before windows left it: the fence one chunk, the chunking version 1.
        await connection.execute("UPDATE chunking SET version = 1")
        await connection.execute(
            "DELETE FROM vault_chunks WHERE chunk_index > 0 AND file_id = (SELECT id FROM vault_files WHERE path = $1)",
            "Long.md",
        )
    windows = len(await chunks_of(ingest, "Long.md"))
    before = len(ingest.embedded_texts())

    events = await ingest.sync()
    outcomes = {path: done.outcome for path, done in files(events).items()}
    assert outcomes == {"Architecture.md": pb.FILE_OUTCOME_UPDATED, "Long.md": pb.FILE_OUTCOME_UPDATED}
    assert len(await chunks_of(ingest, "Long.md")) > windows
    embedded = ingest.embedded_texts()[before:]
    assert embedded and all("step_" in text for text in embedded), "the unchanged note's vectors were kept"

    again = await ingest.sync()
    assert {done.outcome for done in files(again).values()} == {pb.FILE_OUTCOME_UNCHANGED}


async def test_notes_and_passages_are_dated_from_the_notes_and_the_status_says_by_what(ingest: Ingest) -> None:
    ingest.vault.write("Journal/2026-01-20.md", "# Journal 2026-01-20\n\nMeasured the kitchen wall.\n")
    ingest.vault.write("Plan.md", "---\ncreated: 2026-02-03\n---\n# Plan\n\nThe first plan.\n")
    ingest.vault.write(
        "Log.md",
        "# Log\n\nA running log.\n\n## 20 January 2026\n\nChose quartz.\n\n## 2026-03-02\n\nTiles ordered.\n",
    )
    ingest.vault.write("Bad date.md", "---\ndate: someday\n---\n# Bad date\n\nText.\n")
    undated = ingest.vault.write("Undated.md", "# Undated\n\nNo date anywhere.\n")
    os.utime(undated, (1_767_225_600, 1_767_225_600))  # 2026-01-01 00:00 UTC
    done = files(await ingest.sync())
    # A bad date is a warning for its file, which is indexed all the same.
    assert done["Bad date.md"].outcome == pb.FILE_OUTCOME_ADDED
    assert any("front matter date: 'someday' is not a date" in w for w in done["Bad date.md"].warnings)

    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    dates = {f.path: (f.date, f.date_source) for f in status.files}
    assert dates["Journal/2026-01-20.md"] == ("2026-01-20", "file name")
    assert dates["Plan.md"] == ("2026-02-03", "front matter created")
    assert dates["Undated.md"] == ("2026-01-01", "modification time")
    async with ingest.db.pool.acquire() as connection:
        log = await connection.fetch(
            """SELECT c.heading_path, c.date_start, c.date_source FROM vault_chunks c JOIN vault_files f
               ON f.id = c.file_id WHERE f.path = 'Log.md' ORDER BY c.chunk_index"""
        )
    assert [(r["date_start"].isoformat(), r["date_source"]) for r in log][-2:] == [
        ("2026-01-20", "heading"),
        ("2026-03-02", "heading"),
    ]

    # Touched, not changed: a note dated by its modification time moves to the new day, passages and all.
    os.utime(undated, (1_767_312_000, 1_767_312_000))  # 2026-01-02
    await ingest.sync()
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    assert {f.path: f.date for f in status.files}["Undated.md"] == "2026-01-02"
    async with ingest.db.pool.acquire() as connection:
        days = await connection.fetch(
            "SELECT DISTINCT c.date_start FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id "
            "WHERE f.path = 'Undated.md'"
        )
    assert [r["date_start"].isoformat() for r in days] == ["2026-01-02"]


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


async def test_a_sync_whose_end_cannot_be_recorded_finishes_and_says_so_in_the_log(
    ingest: Ingest, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def fails(*args: object) -> None:
        raise ConnectionResetError("the database went away")

    monkeypatch.setattr(store, "finish_run", fails)
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    events = await ingest.sync()
    assert events[-1].WhichOneof("event") == "done", "the sync completes"
    logged = [record for record in caplog.records if "the end of a sync could not be recorded" in record.message]
    assert logged and logged[0].exc_info is not None, "logged with the error, not dropped"


async def index_status(ingest: Ingest) -> pb.GetIndexStatusResponse:
    return await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(), timeout=10)


async def test_a_sync_left_running_by_a_dead_process_is_interrupted_but_not_one_another_process_runs(
    ingest: Ingest,
) -> None:
    ingest.vault.write("Architecture.md", ARCHITECTURE_NOTE)
    await ingest.sync()
    async with ingest.db.pool.acquire() as connection:
        # What an ingest process killed mid-sync leaves: its run 'running', the sync lock gone with its session.
        dead = await connection.fetchval("INSERT INTO ingest_runs (vault_path) VALUES ('/gone') RETURNING id")
    other = await asyncpg.connect(os.environ["DATABASE_URL"])
    try:
        # Another ingest process's sync holds the lock: while it does, its run is the one running, left alone.
        assert await store.try_lock_sync(other)
        await ingest.restart()
        with pytest.raises(grpc.aio.AioRpcError):
            await ingest.sync()
        status = await index_status(ingest)
        assert status.last_run.state == pb.SYNC_RUN_STATE_RUNNING and not status.last_run.HasField("finished_at")
        await store.unlock_sync(other)
    finally:
        await other.close()
    # Nobody holds the lock now: a process starting marks the run interrupted, saying why.
    await ingest.restart()
    async with asyncio.timeout(30):
        # The server's background work as it starts: no event to wait on.
        while (status := await index_status(ingest)).last_run.state == pb.SYNC_RUN_STATE_RUNNING:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    assert status.last_run.state == pb.SYNC_RUN_STATE_INTERRUPTED and status.last_run.HasField("finished_at")
    assert "stopped before it finished" in status.last_run.error
    assert status.HasField("last_sync"), "the last sync that succeeded is still named"
    events = await ingest.sync()
    assert events[-1].WhichOneof("event") == "done"
    async with ingest.db.pool.acquire() as connection:
        assert await connection.fetchval("SELECT status FROM ingest_runs WHERE id = $1", dead) == "interrupted"
    assert (await index_status(ingest)).last_run.state == pb.SYNC_RUN_STATE_SUCCEEDED


async def test_a_new_sync_marks_a_dead_process_run_interrupted(ingest: Ingest) -> None:
    async with ingest.db.pool.acquire() as connection:
        dead = await connection.fetchval("INSERT INTO ingest_runs (vault_path) VALUES ('/gone') RETURNING id")
    ingest.vault.write("Architecture.md", ARCHITECTURE_NOTE)
    await ingest.sync()
    async with ingest.db.pool.acquire() as connection:
        assert await connection.fetchval("SELECT status FROM ingest_runs WHERE id = $1", dead) == "interrupted"
