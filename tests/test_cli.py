"""The `secondbrain` command as a person runs it: real processes, real ports, real PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import asyncpg
import pytest

from secondbrain.service.health_client import check_health, wait_until_serving
from tests.command import run_secondbrain, secondbrain, serving_port
from tests.environment import clean_environ
from tests.service.databases import other_database  # noqa: F401 - a fixture

SERVICE_NAMES = {
    "ingest": "secondbrain.ingest.v1.IngestService",
    "retrieve": "secondbrain.retrieve.v1.RetrieveService",
    "chat": "secondbrain.chat.v1.ChatService",
}


def _clean_env(**extra: str) -> dict[str, str]:
    env = clean_environ()
    env.pop("DATABASE_URL", None)
    return {**env, **extra}


async def _serve_and_check(service: str, env: dict[str, str]) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "serve", service, "--port", "0", env=env, stderr=asyncio.subprocess.PIPE
    )
    try:
        port = await serving_port(process)
        address = f"127.0.0.1:{port}"
        # Listening, it may still be loading its model (retrieve): health says SERVING once it has.
        assert await wait_until_serving(address, 120)
        assert await check_health(address) == "SERVING"
        assert await check_health(address, SERVICE_NAMES[service]) == "SERVING"
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0
        assert await check_health(address, rpc_timeout=1) == "UNREACHABLE"
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.mark.parametrize("service", sorted(SERVICE_NAMES))
async def test_serve_answers_health_and_stops_on_sigterm(service: str, service_env: dict[str, str]) -> None:
    await _serve_and_check(service, service_env)


async def test_serve_on_the_embedded_default(tmp_path: Path) -> None:
    """With DATABASE_URL unset, the service starts its own PostgreSQL in the data directory and migrates it."""
    env = _clean_env(XDG_DATA_HOME=str(tmp_path / "xdg"))
    await _serve_and_check("retrieve", env)
    assert (tmp_path / "xdg" / "secondbrain" / "postgres" / "PG_VERSION").is_file()
    # The service was the last user of the embedded server, so stopping it stopped PostgreSQL too.
    assert not (tmp_path / "xdg" / "secondbrain" / "postgres" / "postmaster.pid").exists()


def test_migrate_reports_and_is_idempotent(empty_database: str, tmp_path: Path) -> None:
    env = _clean_env(DATABASE_URL=empty_database, SECONDBRAIN_DATA_DIR=str(tmp_path))
    first = secondbrain("migrate", env=env)
    assert first.returncode == 0, first.stderr
    assert "applied 0001_initial" in first.stdout
    second = secondbrain("migrate", env=env)
    assert second.returncode == 0, second.stderr
    assert "applied" not in second.stdout
    assert "schema is up to date" in second.stdout


def test_migrate_wait_applies_nothing_and_waits_for_the_schema(empty_database: str, tmp_path: Path) -> None:
    env = _clean_env(DATABASE_URL=empty_database, SECONDBRAIN_DATA_DIR=str(tmp_path))
    waited = secondbrain("migrate", "--wait", "0", env=env)
    assert waited.returncode == 1
    assert "not up to date" in waited.stderr and "0001_initial" in waited.stderr and "migration Job" in waited.stderr
    assert secondbrain("migrate", env=env).returncode == 0
    ready = secondbrain("migrate", "--wait", "5", env=env)
    assert ready.returncode == 0, ready.stderr
    assert "schema is up to date" in ready.stdout and "applied" not in ready.stdout


def test_prepare_model_reads_a_cached_export_and_says_where_it_is(tmp_path: Path) -> None:
    # The session's export (conftest.py); that a fresh directory gets one made is the Dockerfile's test.
    env = _clean_env(SECONDBRAIN_DATA_DIR=str(tmp_path))
    result = secondbrain("prepare-model", env=env)
    assert result.returncode == 0, result.stderr
    cache = env["SECONDBRAIN_MODEL_CACHE_DIR"]
    assert "on onnx" in result.stdout and f"its export is in {cache}" in result.stdout


def test_prepare_model_explains_what_it_cannot_do(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "secondbrain.json").write_text('{"embedding": {"provider": "openai"}}')
    remote = secondbrain("prepare-model", "--vault", str(vault), env=_clean_env(SECONDBRAIN_DATA_DIR=str(tmp_path)))
    assert remote.returncode == 0 and "nothing to prepare" in remote.stdout and "'openai'" in remote.stdout
    a_file = tmp_path / "models"
    a_file.write_text("not a directory")
    refused = secondbrain("prepare-model", "--models-dir", str(a_file), env=_clean_env())
    assert refused.returncode == 1 and "is a file; give a directory" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_unreachable_database_is_a_clear_error(service_env: dict[str, str]) -> None:
    env = {**service_env, "DATABASE_URL": "postgresql://me:hunter2@127.0.0.1:9/notes"}
    result = secondbrain("serve", "retrieve", "--port", "0", env=env)
    assert result.returncode == 1
    assert "cannot connect to PostgreSQL at postgresql://me:***@127.0.0.1:9/notes" in result.stderr
    assert "hunter2" not in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_configuration_is_a_clear_error(service_env: dict[str, str]) -> None:
    result = secondbrain("serve", "chat", env={**service_env, "SECONDBRAIN_CHAT_PORT": "seventy"})
    assert result.returncode == 1
    assert "SECONDBRAIN_CHAT_PORT" in result.stderr
    assert "Traceback" not in result.stderr


def test_health_of_nothing_running_fails(service_env: dict[str, str]) -> None:
    result = secondbrain("health", "ingest", "--address", "127.0.0.1:9", env=service_env)
    assert result.returncode == 1
    assert "UNREACHABLE" in result.stdout


def test_help_explains_every_command(service_env: dict[str, str]) -> None:
    result = secondbrain("--help", env=service_env)
    assert result.returncode == 0
    for command in ("serve", "up", "migrate", "prepare-model", "health"):
        assert command in result.stdout


async def test_a_command_served_in_process_meets_the_same_interceptors_as_a_running_service(
    service_env: dict[str, str],
) -> None:
    """With nothing running, `search` starts the retrieve service's own server in its process and calls it over a
    channel: the token is presented, and a request over the method's size limit is refused as a running service
    refuses it, before any handler reads it."""
    env = {**service_env, "SECONDBRAIN_API_TOKEN": "in-process-token-0123456789", "SECONDBRAIN_RETRIEVE_PORT": "9"}
    oversized = "word " * 14_000  # 70,000 bytes; Search takes 64 KiB

    code, stdout, stderr = await run_secondbrain("search", "alpha", "--mode", "keyword", env=env)
    assert code == 0, stderr
    assert "No retrieve service at 127.0.0.1:9; working in this process." in stderr
    assert "No notes match." in stdout
    code, _, in_process = await run_secondbrain("search", oversized, env=env)
    assert code == 1

    server = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "serve", "retrieve", "--port", "0", env=env, stderr=asyncio.subprocess.PIPE
    )
    try:
        address = f"127.0.0.1:{await serving_port(server)}"
        code, _, remote = await run_secondbrain("search", oversized, "--address", address, env=env)
    finally:
        server.send_signal(signal.SIGTERM)
        await asyncio.wait_for(server.wait(), 30)
    assert code == 1
    refusal = "secondbrain: the request is 70,010 bytes, over the 64 KiB that Search takes"
    assert refusal in in_process and "(RESOURCE_EXHAUSTED)" in in_process, in_process
    assert in_process.splitlines()[-1] == remote.splitlines()[-1]
    assert "Traceback" not in in_process and "fork" not in in_process


async def test_a_command_of_another_database_does_not_use_the_running_service_and_says_so(
    service_env: dict[str, str],
    other_database: str,  # noqa: F811 - the fixture
) -> None:
    """`secondbrain eval --vault B` with B's own database, say, while a stack of vault A runs: the running service
    says which database it serves, and a command configured for another one works in its own process."""
    server = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "serve", "retrieve", "--port", "0", env=service_env,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        address = f"127.0.0.1:{await serving_port(server)}"
        ours = {**service_env, "SECONDBRAIN_RETRIEVE_ADDRESS": address}
        theirs = {**ours, "DATABASE_URL": other_database}
        code, _, stderr = await run_secondbrain("search", "alpha", "--mode", "keyword", env=theirs)
        assert code == 0, stderr
        assert f"The running retrieve service at {address} serves another database; working in this process." in (
            stderr
        )
        code, _, stderr = await run_secondbrain("search", "alpha", "--mode", "keyword", env=ours)
        assert code == 0 and "in this process" not in stderr, stderr
        health = secondbrain("health", "retrieve", "--address", address, env=theirs)
        assert health.returncode == 0 and "SERVING  (another database)" in health.stdout, health.stdout
        assert "another database" not in secondbrain("health", "retrieve", "--address", address, env=ours).stdout
    finally:
        server.send_signal(signal.SIGTERM)
        await asyncio.wait_for(server.wait(), 30)


async def test_ask_answers_in_process_with_retrieve_started_beside_it(service_env: dict[str, str]) -> None:
    """No chat and no retrieve service: `ask` serves both in its process, chat reaching retrieve over gRPC with the
    configured token, and answers (extractively, with no API key) as a running chat service would."""
    env = {key: value for key, value in service_env.items() if not key.endswith("_API_KEY") and key != "OLLAMA_URL"}
    env.update(SECONDBRAIN_API_TOKEN="in-process-token-0123456789", SECONDBRAIN_CHAT_PORT="9",
               SECONDBRAIN_RETRIEVE_PORT="9")  # fmt: skip
    code, stdout, stderr = await run_secondbrain("ask", "What is in my notes?", "--json", env=env)
    assert code == 0, stderr
    assert "No chat service at 127.0.0.1:9; answering in this process." in stderr
    events = [json.loads(line) for line in stdout.splitlines()]
    assert [next(iter(event)) for event in (events[0], events[-1])] == ["sources", "done"]
    assert events[0]["sources"]["retrieval"]["plan"]["queries"][0]["text"] == "What is in my notes?"
    assert events[-1]["done"]["provider"] == "extractive"
    # As text: no token counts for an answer no model wrote.
    code, stdout, stderr = await run_secondbrain("ask", "What is in my notes?", env=env)
    assert code == 0, stderr
    assert "Quoted from your notes; no language model was used." in stdout and " in, " not in stdout
    # Neither was kept as a conversation (found by a user: each `ask` added one to the web UI's list); --save keeps
    # one, and --conversation continues it.
    assert "Not kept: --save keeps it" in stderr
    assert await _conversations(service_env["DATABASE_URL"]) == []
    code, _, stderr = await run_secondbrain("ask", "What is in my notes?", "--save", env=env)
    assert code == 0, stderr
    [(conversation, messages)] = await _conversations(service_env["DATABASE_URL"])
    assert messages == 2 and f"continue it with --conversation {conversation}" in stderr
    code, _, stderr = await run_secondbrain("ask", "And else?", "--conversation", conversation, env=env)
    assert code == 0, stderr
    assert await _conversations(service_env["DATABASE_URL"]) == [(conversation, 4)]


async def _conversations(database_url: str) -> list[tuple[str, int]]:
    """Every stored conversation, with how many messages it holds."""
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch(
            "SELECT c.id::text AS id, count(m.id) AS messages FROM chat_conversations c "
            "LEFT JOIN chat_messages m ON m.conversation_id = c.id GROUP BY c.id"
        )
    finally:
        await connection.close()
    return [(row["id"], row["messages"]) for row in rows]


async def test_ask_agent_prints_each_step_then_the_answer(service_env: dict[str, str], tmp_path: Path) -> None:
    """`ask --agent` against a scripted model on OpenAI's wire: the steps as dim lines, then the answer."""
    from tests.wire import OpenAIServer, Reply
    from tests.wire.script import ToolCall

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "secondbrain.json").write_text(
        json.dumps({"chat": {"default_provider": "openai"}, "retrieve": {"condense": False}})
    )
    async with OpenAIServer() as llm:
        llm.script.push(
            Reply(deltas=[], tool_calls=[ToolCall("list_notes", {"folder": "Projects"}, id="call_list"),
                                         ToolCall("read_note", {"path": "Nowhere.md"}, id="call_read")]),
            Reply(deltas=["Nothing is indexed under Projects yet."]),
        )  # fmt: skip
        env = {key: value for key, value in service_env.items() if not key.endswith("_API_KEY")}
        env.update(SECONDBRAIN_VAULT=str(vault), OPENAI_API_KEY="sk-test-cli-0123456789",
                   OPENAI_BASE_URL=llm.base_url, SECONDBRAIN_CHAT_PORT="9", SECONDBRAIN_RETRIEVE_PORT="9")  # fmt: skip
        code, stdout, stderr = await run_secondbrain("ask", "What is in Projects?", "--agent", env=env)
        assert code == 0, stderr
        assert "  · Listed 0 of 0 notes\n" in stdout
        assert "  ✗ read_note failed: the index holds no note at 'Nowhere.md'" in stdout
        assert "\n\nNothing is indexed under Projects yet." in stdout
        assert [r.json.get("tool_choice") for r in llm.requests if r.path.endswith("/chat/completions")] == [
            "auto", "auto",
        ]  # fmt: skip
        assert "--agent" in (await run_secondbrain("ask", "--help", env=env))[1]


async def test_ask_and_retrieve_read_last_week_from_the_moment_given(
    service_env: dict[str, str], tmp_path: Path
) -> None:
    """The terminal's clock by default; `--now` asks as of another moment: "last week" is the week before it, and
    the quoting answer (no key) quotes that week's decision, not the one before."""
    vault = tmp_path / "vault"
    (vault / "Journal").mkdir(parents=True)
    (vault / "Journal" / "2026-11-10.md").write_text("# 10 November 2026\n\nWe decided on a quartz worktop.\n")
    (vault / "Journal" / "2026-11-25.md").write_text("# 25 November 2026\n\nWe decided on an oak worktop.\n")
    env = {key: value for key, value in service_env.items() if not key.endswith("_API_KEY") and key != "OLLAMA_URL"}
    env.update(SECONDBRAIN_VAULT=str(vault), SECONDBRAIN_CHAT_PORT="9", SECONDBRAIN_RETRIEVE_PORT="9",
               SECONDBRAIN_INGEST_PORT="9")  # fmt: skip
    code, _, stderr = await run_secondbrain("ingest", env=env)
    assert code == 0, stderr
    question = "What did we decide about the worktop last week?"
    code, stdout, stderr = await run_secondbrain("ask", question, "--now", "2026-11-30T18:00:00+00:00", env=env)
    assert code == 0, stderr
    assert "oak worktop" in stdout and "quartz" not in stdout, stdout
    assert "[1] 25 November 2026  Journal/2026-11-25.md:3-3, dated 2026-11-25" in stdout, stdout
    code, stdout, stderr = await run_secondbrain(
        "retrieve", question, "--now", "2026-11-17T09:00:00+00:00", "--json", env=env
    )
    assert code == 0, stderr
    retrieved = json.loads(stdout)
    assert retrieved["plan"]["time"] == "Notes dated 9\u201315 November 2026"
    assert [p["note_path"] for p in retrieved["passages"]] == ["Journal/2026-11-10.md"]
    code, _, stderr = await run_secondbrain("ask", question, "--now", "last tuesday", env=env)
    assert code == 2 and "is not a moment with its UTC" in stderr, stderr
    code, _, stderr = await run_secondbrain("ask", question, "--now", "9999-12-31T23:59:59+00:00", env=env)
    assert code == 2 and "years 1900 to 2999" in stderr, stderr
