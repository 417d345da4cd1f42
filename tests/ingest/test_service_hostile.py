"""The IngestService against a hostile vault or client (issue 17): each bad file is one failed file, the rest of the
sync goes on, and nothing outside the vault reaches the index or a model."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import grpc
import pytest

from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from tests.ingest.conftest import ARCHITECTURE_NOTE as ARCHITECTURE
from tests.ingest.conftest import Ingest, chunks_of, failed_reasons, files, write_raw


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
    reasons = await failed_reasons(ingest)
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


def rename_raw(source: bytes, target: Path) -> None:
    Path(os.fsdecode(source)).rename(target)


async def test_a_file_name_that_is_not_utf8_is_one_failed_file(ingest: Ingest) -> None:
    latin1_name = write_raw(ingest.vault.root, b"Caf\xe9.md", b"# Cafe\n\nNamed in Latin-1.\n")
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
    write_raw(ingest.vault.root, b"R\xe9sum\xe9s/Plan.md", b"# Plan\n\nIn a Latin-1 folder.\n")
    write_raw(ingest.vault.root, b"R\xe9sum\xe9s/photo.jpg", b"\xff\xd8\xff")
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    events = await ingest.sync()
    assert events[-1].WhichOneof("event") == "done", "the sync completes"
    failed = {path: f.error for path, f in files(events).items() if f.outcome == pb.FILE_OUTCOME_FAILED}
    # The picture is a file of the vault too (an attachment), so it fails as the note does, by its folder's name.
    assert sorted(failed) == ["R\\xe9sum\\xe9s/Plan.md", "R\\xe9sum\\xe9s/photo.jpg"]
    assert all("folder name" in reason and "rename it" in reason for reason in failed.values())
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_ADDED
    assert len(await chunks_of(ingest, "Architecture.md")) > 0


async def test_a_persona_whose_name_is_not_utf8_is_one_failed_file(ingest: Ingest) -> None:
    ingest.vault.write(".claude/agents/gardener.md", "Speak as a gardener.\n")
    write_raw(ingest.vault.root, b".claude/agents/caf\xe9.md", b"Speak as a waiter.\n")
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    events = await ingest.sync()
    assert events[-1].WhichOneof("event") == "done", "the sync completes"
    waiter = files(events)[".claude/agents/caf\\xe9.md"]
    assert waiter.outcome == pb.FILE_OUTCOME_FAILED
    assert "file name is not valid UTF-8" in waiter.error
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_ADDED
    assert set(await personas(ingest)) == {"assistant", "gardener"}


async def stored_text(ingest: Ingest) -> str:
    """Everything the index holds of the notes' text: bodies and chunks."""
    async with ingest.db.pool.acquire() as connection:
        bodies = await connection.fetch("SELECT body FROM vault_files")
        chunks = await connection.fetch("SELECT content FROM vault_chunks")
    return " ".join([row["body"] for row in bodies] + [row["content"] for row in chunks])


async def test_a_note_swapped_for_a_link_between_walk_and_read_leaves_nothing_of_the_target(
    ingest: Ingest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by a probe: the walk saw a note, then the file became a link to /etc/passwd before the worker read it,
    # which was indexed and served; the next sync said "not followed" and kept it.
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    plan = ingest.vault.write("Plan.md", "# Plan\n\nThe first plan.\n")
    await ingest.sync()
    assert "The first plan" in await stored_text(ingest)
    plan.write_text("# Plan\n\nThe second plan.\n")  # changed, so this sync reads it

    from secondbrain.ingest import pipeline

    walk = pipeline.walk_vault

    def walk_then_swap(*args: object, **options: object) -> object:
        found = walk(*args, **options)
        plan.unlink()
        plan.symlink_to(secret)
        return found

    monkeypatch.setattr(pipeline, "walk_vault", walk_then_swap)
    events = await ingest.sync()
    swapped = files(events)["Plan.md"]
    assert swapped.outcome == pb.FILE_OUTCOME_FAILED
    assert "outside the vault" in swapped.error
    text = await stored_text(ingest)
    assert "root:x:0:0" not in text and "root:x:0:0" not in " ".join(ingest.embedded_texts())
    assert "plan" not in text.lower(), "the link's path holds nothing of the note it replaced either"
    assert "outside the vault" in (await failed_reasons(ingest))["Plan.md"]


async def test_a_note_that_became_a_link_loses_its_stored_text_at_the_next_sync(ingest: Ingest, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text("# Elsewhere\n\nNot of this vault.\n")
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    plan = ingest.vault.write("Plan.md", "# Plan\n\nThe first plan.\n")
    inside = ingest.vault.write("Notes/Budget.md", "# Budget\n\nThe budget.\n")
    await ingest.sync()
    plan.unlink()
    plan.symlink_to(elsewhere)
    inside.unlink()
    inside.symlink_to(ingest.vault.root / "Architecture.md")  # inside the vault, indexed under its own path
    events = await ingest.sync()
    assert "outside the vault" in files(events)["Plan.md"].error
    assert "indexed under that path" in files(events)["Notes/Budget.md"].error
    text = await stored_text(ingest)
    assert "first plan" not in text and "The budget" not in text and "Not of this vault" not in text
    assert await chunks_of(ingest, "Plan.md") == [] and await chunks_of(ingest, "Notes/Budget.md") == []
    assert len(await chunks_of(ingest, "Architecture.md")) > 0
    # A note that is only unreadable for now keeps its indexed version: nothing stored is lost to a bad save.
    (ingest.vault.root / "Architecture.md").write_bytes(b"# Architecture\n\x00broken")
    await ingest.sync()
    assert len(await chunks_of(ingest, "Architecture.md")) > 0


async def test_a_front_matter_of_megabytes_is_not_read_and_the_note_body_is_indexed(ingest: Ingest) -> None:
    """A planted 4 MB front matter (YAML read at seconds a megabyte) is skipped with a warning naming the setting."""
    keys = "".join(f"key{i}: a value the parser would have to read {i}\n" for i in range(80_000))
    ingest.vault.write(
        "Planted.md", f"---\ntitle: Planted title\ntags: [planted]\n{keys}---\n# Compost\n\nTurn it weekly.\n"
    )
    events = await ingest.sync()
    planted = files(events)["Planted.md"]
    assert planted.outcome == pb.FILE_OUTCOME_ADDED, "the note is indexed, its body searchable"
    warning = next(w for w in planted.warnings if "front matter" in w)
    assert "over the 65,536-byte limit (ingest.max_front_matter_bytes)" in warning and "not read" in warning
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True), timeout=30)
    row = next(f for f in status.files if f.path == "Planted.md")
    assert row.state == pb.FILE_STATE_INDEXED and "ingest.max_front_matter_bytes" in row.reason
    assert any("Turn it weekly." in chunk["content"] for chunk in await chunks_of(ingest, "Planted.md"))
    async with ingest.db.pool.acquire() as connection:
        note = await connection.fetchrow("SELECT title, frontmatter FROM vault_files WHERE path = 'Planted.md'")
    assert note["title"] == "Compost" and note["frontmatter"] in ("{}", {}), "nothing of the block was read"


async def test_the_front_matter_limit_is_the_vault_setting(ingest: Ingest) -> None:
    front = "---\ntitle: Planted title\nnote: " + "x" * 200 + "\n---\n# Compost\n\nTurn it weekly.\n"
    ingest.vault.configure(embedding={"provider": "openai"}, ingest={"max_front_matter_bytes": 100})
    ingest.vault.write("Small.md", front)
    warnings = files(await ingest.sync())["Small.md"].warnings
    assert any("over the 100-byte limit (ingest.max_front_matter_bytes)" in w for w in warnings), warnings
    ingest.vault.configure(embedding={"provider": "openai"}, ingest={"max_front_matter_bytes": 1000})
    ingest.vault.write("Small.md", front + "\nEdited.\n")
    assert not any("front matter" in w for w in files(await ingest.sync(force=True))["Small.md"].warnings)
    async with ingest.db.pool.acquire() as connection:
        assert await connection.fetchval("SELECT title FROM vault_files WHERE path = 'Small.md'") == "Planted title"


async def test_a_note_that_is_a_hard_link_is_not_read_and_what_was_stored_goes(ingest: Ingest, tmp_path: Path) -> None:
    """Issue 47, friction 3: a hard link from the vault to a file outside it was indexed and served (nothing shows
    where a hard link's other name is, so every note with more than one is refused, as attachments are)."""
    outside = tmp_path / "outside.md"
    outside.write_text("# Private\n\nThe server's own secret text.\n", encoding="utf-8")
    ingest.vault.write("Innocent.md", "# Innocent\n\nAn ordinary note.\n")
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    await ingest.sync()
    (ingest.vault.root / "Innocent.md").unlink()
    os.link(outside, ingest.vault.root / "Innocent.md")
    os.link(outside, ingest.vault.root / "Private.md")
    events = await ingest.sync()
    for path in ("Innocent.md", "Private.md"):
        refused = files(events)[path]
        assert refused.outcome == pb.FILE_OUTCOME_FAILED and "is a hard link" in refused.error, refused
    assert files(events)["Architecture.md"].outcome == pb.FILE_OUTCOME_UNCHANGED
    async with ingest.db.pool.acquire() as connection:
        stored = await connection.fetchval("SELECT string_agg(content, ' ') FROM vault_chunks")
        bodies = await connection.fetchval("SELECT string_agg(body, ' ') FROM vault_files")
    assert "secret text" not in stored and "secret text" not in (bodies or "")
    assert "ordinary note" not in stored, "the note the link replaced is gone from the index"
    assert "hard link" in (await failed_reasons(ingest))["Private.md"]
