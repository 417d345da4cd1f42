"""`secondbrain ingest` and `secondbrain status` as a person runs them, in this process or against the service."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from tests.command import run_secondbrain
from tests.environment import clean_environ
from tests.ingest.conftest import ARCHITECTURE_NOTE, Ingest, Vault, embedding_env
from tests.wire import OpenAIServer


@pytest.fixture
async def cli_env(vault: Vault, database_url: str, tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    async with OpenAIServer(dimensions=1536) as server:
        env = clean_environ()
        env.update(
            embedding_env(server),
            DATABASE_URL=database_url,
            SECONDBRAIN_DATA_DIR=str(tmp_path / "data"),
            # Nothing listens here, so the CLI works in its own process.
            SECONDBRAIN_INGEST_PORT="9",
            COLUMNS="120",
        )
        yield env


async def test_ingest_in_process_prints_progress_and_a_summary(vault: Vault, cli_env: dict[str, str]) -> None:
    vault.write("Architecture.md", ARCHITECTURE_NOTE)
    vault.write("Inbox/Idea.md", "# Idea\n\nUse pgvector.\n")
    code, _, stderr = await run_secondbrain("ingest", str(vault.root), env=cli_env)
    assert code == 0, stderr
    assert "working in this process" in stderr
    assert "Synced 2 files" in stderr and "2 added" in stderr

    code, stdout, stderr = await run_secondbrain("status", env=cli_env)
    assert code == 0, stderr
    assert "Notes: 2" in stdout
    assert "openai:text-embedding-3-small (1536-d)" in stdout
    assert "Last change taken in: 20" in stdout and "Watching" not in stdout, "no service watches the vault"

    # Each note's date and what it was read from (Architecture's front matter has none: its modification time).
    vault.write("Journal/2026-01-20.md", "# Journal\n\nMeasured the wall.\n")
    await run_secondbrain("ingest", str(vault.root), env=cli_env)
    code, stdout, stderr = await run_secondbrain("status", "--files", env=cli_env)
    assert code == 0, stderr
    assert "Journal/2026-01-20.md (1 chunk, dated 2026-01-20 by its file name)" in stdout, stdout
    assert "Architecture.md (" in stdout and "by its modification time)" in stdout


async def test_a_sync_prints_ten_warnings_and_counts_the_rest(vault: Vault, cli_env: dict[str, str]) -> None:
    for number in range(13):
        vault.write(f"Broken {number:02}.md", "---\ntitle: [unclosed\n---\n# Still here\n\nBody text survives.\n")
    code, _, stderr = await run_secondbrain("ingest", str(vault.root), env=cli_env)
    assert code == 0, stderr
    shown = [line for line in stderr.splitlines() if line.startswith("! Broken")]
    assert len(shown) == 10, stderr
    assert "! 3 more warnings not shown: `secondbrain ingest --json` lists every one." in stderr


async def test_status_files_says_the_warning_ingest_printed_until_the_note_is_fixed(
    vault: Vault, cli_env: dict[str, str]
) -> None:
    vault.write("Broken.md", "---\ntitle: [unclosed\n---\n# Still here\n\nBody text survives.\n")
    vault.write("Fine.md", "# Fine\n\nNothing wrong here.\n")
    code, _, stderr = await run_secondbrain("ingest", str(vault.root), env=cli_env)
    assert code == 0, stderr
    [printed] = [line.removeprefix("! Broken.md: ") for line in stderr.splitlines() if line.startswith("! Broken.md")]
    assert "front matter" in printed, stderr
    code, stdout, stderr = await run_secondbrain("status", "--files", env=cli_env)
    assert code == 0, stderr
    [broken] = [line for line in stdout.splitlines() if "Broken.md" in line]
    assert broken.startswith("indexed  Broken.md (1 chunk, dated ") and broken.endswith(f"): {printed}"), stdout
    assert next(line for line in stdout.splitlines() if "Fine.md" in line).endswith(")"), "no warning, nothing said"
    # Without --files only what is not indexed is listed, and a count of the notes indexed with a warning.
    code, stdout, _ = await run_secondbrain("status", env=cli_env)
    assert "Broken.md" not in stdout
    assert "1 note indexed with a warning: `secondbrain status --files` says which." in stdout.splitlines(), stdout
    vault.write("Broken.md", "---\ntitle: Closed\n---\n# Still here\n\nBody text survives.\n")
    code, _, stderr = await run_secondbrain("ingest", str(vault.root), env=cli_env)
    assert code == 0 and "! Broken.md" not in stderr, stderr
    code, stdout, _ = await run_secondbrain("status", "--files", env=cli_env)
    assert next(line for line in stdout.splitlines() if "Broken.md" in line).endswith(")"), stdout


async def test_ingest_json_lines_and_exit_code_on_a_failed_note(vault: Vault, cli_env: dict[str, str]) -> None:
    vault.write("Good.md", ARCHITECTURE_NOTE)
    (vault.root / "Bad.md").write_bytes(b"\x00binary")
    code, stdout, _ = await run_secondbrain("ingest", str(vault.root), "--json", env=cli_env)
    assert code == 1, "a failed note is a non-zero exit, for scripts"
    events = [json.loads(line) for line in stdout.splitlines()]
    assert "started" in events[0] and "done" in events[-1]
    failed = [e["file"] for e in events if "file" in e and e["file"]["outcome"] == "FILE_OUTCOME_FAILED"]
    assert [f["path"] for f in failed] == ["Bad.md"]
    assert "binary" in failed[0]["error"]

    code, stdout, _ = await run_secondbrain("status", "--json", env=cli_env)
    status = json.loads(stdout)
    assert status["failed_notes"] == 1
    assert [f["path"] for f in status["files"] if f["state"] == "FILE_STATE_FAILED"] == ["Bad.md"]


async def test_status_says_a_sync_was_interrupted_until_one_succeeds(vault: Vault, cli_env: dict[str, str]) -> None:
    vault.write("Good.md", ARCHITECTURE_NOTE)
    await run_secondbrain("ingest", str(vault.root), env=cli_env)
    connection = await asyncpg.connect(cli_env["DATABASE_URL"])
    try:  # what an ingest process killed mid-sync leaves, once the next process to start has seen it
        await connection.execute(
            "INSERT INTO ingest_runs (vault_path, status, finished_at, error) VALUES ($1, 'interrupted', now(), $2)",
            str(vault.root),
            "the ingest process running this sync stopped before it finished",
        )
    finally:
        await connection.close()
    code, stdout, _ = await run_secondbrain("status", env=cli_env)
    assert code == 0
    interrupted = [line for line in stdout.splitlines() if line.startswith("The sync started ")]
    assert interrupted and interrupted[0].endswith("was interrupted: the ingest process running this sync stopped "
                                                   "before it finished"), stdout  # fmt: skip
    await run_secondbrain("ingest", str(vault.root), env=cli_env)
    code, stdout, _ = await run_secondbrain("status", env=cli_env)
    assert "The sync started" not in stdout and "A sync is running" not in stdout, stdout


async def test_ingest_through_a_running_service(ingest: Ingest) -> None:
    ingest.vault.write("Architecture.md", ARCHITECTURE_NOTE)
    env = {key: value for key, value in os.environ.items()}
    address = await ingest.address()
    code, stdout, stderr = await run_secondbrain(
        "ingest", str(ingest.vault.root), "--address", address, "--json", env=env
    )
    assert code == 0, stderr
    assert "working in this process" not in stderr
    assert json.loads(stdout.splitlines()[-1])["done"]["totals"]["added"] == 1


async def test_ingest_without_a_vault_says_how_to_give_one(cli_env: dict[str, str]) -> None:
    code, _, stderr = await run_secondbrain("ingest", env=cli_env)
    assert code == 1
    assert "SECONDBRAIN_VAULT" in stderr and "Traceback" not in stderr


async def test_watch_keeps_the_index_in_step(vault: Vault, cli_env: dict[str, str]) -> None:
    vault.write("Architecture.md", ARCHITECTURE_NOTE)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "ingest", str(vault.root), "--watch", "--json", env=cli_env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None

    async def next_event() -> dict:
        line = await asyncio.wait_for(process.stdout.readline(), 60)
        if not line:
            raise AssertionError("the watcher stopped")
        return json.loads(line)

    async def next_change() -> tuple[str, str]:
        """After the first sync the stream is one file event per change, with no sync of its own around it."""
        event = await next_event()
        assert set(event) == {"file"}, event
        return event["file"]["path"], event["file"]["outcome"]

    try:
        event = await next_event()
        while "done" not in event:
            event = await next_event()
        assert event["done"]["totals"]["added"] == 1
        vault.write("New.md", "# New\n\nWritten while watching.\n")
        assert await next_change() == ("New.md", "FILE_OUTCOME_ADDED")
        (vault.root / "Architecture.md").rename(vault.root / "Renamed.md")
        renamed = {await next_change(), await next_change()}
        assert renamed == {("Architecture.md", "FILE_OUTCOME_DELETED"), ("Renamed.md", "FILE_OUTCOME_ADDED")}
    finally:
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 30) == 0, "Ctrl-C ends the watch cleanly"


async def test_watch_at_a_terminal_says_a_line_per_change(vault: Vault, cli_env: dict[str, str]) -> None:
    vault.write("Architecture.md", ARCHITECTURE_NOTE)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "ingest", str(vault.root), "--watch", env=cli_env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    said: list[str] = []

    async def until(text: str) -> None:
        while line := await asyncio.wait_for(process.stderr.readline(), 60):
            said.append(line.decode())
            if text in said[-1]:
                return
        raise AssertionError(f"no {text!r} in:\n{''.join(said)}")

    try:
        await until("Watching")
        assert any("Synced 1 file in" in line for line in said), said
        vault.write("Inbox/New.md", "# New\n\nWritten while watching.\n")
        await until("added Inbox/New.md")
        (vault.root / "Architecture.md").unlink()
        await until("deleted Architecture.md")
    finally:
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 30) == 0, "Ctrl-C ends the watch cleanly"
    assert "Traceback" not in "".join(said)
