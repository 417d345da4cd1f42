"""Which vault an ingest service syncs, and what the vault's own files set: secondbrain.json (ignore globs, the text
search configuration), the agents in .claude/agents, and a sync interval that keeps the index in step."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from tests.ingest.conftest import ARCHITECTURE_NOTE as ARCHITECTURE
from tests.ingest.conftest import Ingest, files


async def eventually_equal(read, expected: object, within: float = 10.0) -> None:
    """Poll the async `read` until it returns `expected`; fail after `within` seconds."""
    deadline = asyncio.get_running_loop().time() + within
    while (value := await read()) != expected:
        assert asyncio.get_running_loop().time() < deadline, f"still {value!r}, not {expected!r}, after {within} s"
        await asyncio.sleep(0.1)


async def test_ignore_globs_and_dot_folders_are_skipped(ingest: Ingest) -> None:
    ingest.vault.configure(embedding={"provider": "openai"}, ingest={"ignore": ["Archive/**", "*.excalidraw.md"]})
    ingest.vault.write("Note.md", "# Note\n\nKept.\n")
    ingest.vault.write("Archive/Old.md", "# Old\n\nIgnored.\n")
    ingest.vault.write("Drawing.excalidraw.md", "# Drawing\n\nIgnored.\n")
    ingest.vault.write(".trash/Gone.md", "# Gone\n\nIgnored.\n")
    assert set(files(await ingest.sync())) == {"Note.md"}


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


async def _sync_another_folder(ingest: Ingest, tmp_path) -> tuple[Path, grpc.aio.AioRpcError]:
    """A sync of a folder beside the vault, holding a note of its own; the error it was refused with."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "Secret.md").write_text("# Secret\n\nNot part of the vault.\n")
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        async for _ in ingest.stub.SyncVault(pb.SyncVaultRequest(vault_path=str(elsewhere))):
            pass
    return elsewhere, raised.value


async def test_a_service_with_a_vault_refuses_to_sync_another_folder(ingest: Ingest, tmp_path) -> None:
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    await ingest.sync()
    _, refused = await _sync_another_folder(ingest, tmp_path)
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "will not sync" in (refused.details() or "")
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    assert [f.path for f in status.files] == ["Architecture.md"], "the index still holds the vault, untouched"


async def test_a_service_without_a_vault_keeps_the_folder_its_index_holds(
    ingest: Ingest, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SECONDBRAIN_VAULT")
    await ingest.restart()
    ingest.vault.write("Architecture.md", ARCHITECTURE)
    # An empty index takes the caller's folder, and the same folder syncs again.
    for _ in range(2):
        events = [e async for e in ingest.stub.SyncVault(pb.SyncVaultRequest(vault_path=str(ingest.vault.root)))]
        assert events[-1].WhichOneof("event") == "done"
    elsewhere, refused = await _sync_another_folder(ingest, tmp_path)
    assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION
    details = refused.details() or ""
    assert f"holds the notes of {ingest.vault.root.resolve()}" in details
    assert f"SECONDBRAIN_VAULT={elsewhere.resolve()}" in details
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    assert [f.path for f in status.files] == ["Architecture.md"], "the index still holds the vault, untouched"
