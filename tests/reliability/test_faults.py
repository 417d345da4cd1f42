"""Faults, on loopback, against the system as separate processes: what breaks, what the client is told, what is kept.

Each test leaves the cluster running and whole for the next (the module shares one cluster).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from dataclasses import dataclass, field

import asyncpg
import grpc
import httpx2
import pytest

from secondbrain.chat.v1 import chat_service_pb2 as chat_pb
from secondbrain.chat.v1 import chat_service_pb2_grpc as chat_grpc
from secondbrain.ingest.v1 import ingest_service_pb2 as ingest_pb
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as ingest_grpc
from secondbrain.retrieve.v1 import retrieve_service_pb2 as retrieve_pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as retrieve_grpc
from tests.reliability.cluster import Cluster, Postgres
from tests.reliability.conftest import NOTES
from tests.reliability.vault import write_vault

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


# -- clients ---------------------------------------------------------------------------------------------------------


async def sync(cluster: Cluster, *, stop_after_files: int | None = None) -> list[ingest_pb.SyncVaultResponse]:
    """A SyncVault stream's events; with `stop_after_files`, ingest is killed (SIGKILL) once that many arrived."""
    events: list[ingest_pb.SyncVaultResponse] = []
    async with grpc.aio.insecure_channel(cluster.address("ingest")) as channel:
        stream = ingest_grpc.IngestServiceStub(channel).SyncVault(ingest_pb.SyncVaultRequest(), timeout=300)
        try:
            async for event in stream:
                events.append(event)
                files = sum(1 for e in events if e.HasField("file"))
                if stop_after_files is not None and files >= stop_after_files:
                    await cluster.kill("ingest")
        except grpc.aio.AioRpcError as error:
            if stop_after_files is None:
                raise
            assert error.code() == grpc.StatusCode.UNAVAILABLE, error
    return events


async def index_status(cluster: Cluster) -> ingest_pb.GetIndexStatusResponse:
    async with grpc.aio.insecure_channel(cluster.address("ingest")) as channel:
        stub = ingest_grpc.IngestServiceStub(channel)
        return await stub.GetIndexStatus(ingest_pb.GetIndexStatusRequest(), timeout=10)


async def interrupted_run(cluster: Cluster) -> ingest_pb.SyncRun:
    """The index status's last sync once it reads as interrupted (within 30 s of ingest starting)."""
    async with asyncio.timeout(30):
        running = ingest_pb.SYNC_RUN_STATE_RUNNING
        while (status := await index_status(cluster)).last_run.state == running:  # noqa: ASYNC110 - another process
            await asyncio.sleep(0.2)
    assert status.last_run.state == ingest_pb.SYNC_RUN_STATE_INTERRUPTED, status.last_run
    return status.last_run


async def sessions_ended(connection: asyncpg.Connection, application: str) -> None:
    """Wait (up to 30 s) until no database session of `application` is left: a killed client's sessions end once
    they notice."""
    query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1"
    async with asyncio.timeout(30):
        while await connection.fetchval(query, application):  # noqa: ASYNC110 - another server's state: no event
            await asyncio.sleep(0.1)


@dataclass
class Turn:
    events: list[tuple[str, dict]] = field(default_factory=list)
    cut: str = ""

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.events]


async def create_conversation(cluster: Cluster) -> str:
    async with httpx2.AsyncClient(base_url=cluster.gateway_url, timeout=30) as client:
        response = await client.post("/api/chat/conversations", json={})
        response.raise_for_status()
        return response.json()["conversation"]["id"]


async def send(cluster: Cluster, conversation: str, content: str, *, on_first_delta=None) -> Turn:
    """One turn over SSE through Envoy and the shim. `on_first_delta` runs (awaited) when the first delta arrives.
    A connection that breaks is recorded in `cut` rather than raised."""
    turn = Turn()
    async with httpx2.AsyncClient(base_url=cluster.gateway_url, timeout=60) as client:
        try:
            async with client.stream(
                "POST", f"/api/chat/conversations/{conversation}/messages", json={"content": content}
            ) as response:
                assert response.status_code == 200, await response.aread()
                event = ""
                async for line in response.aiter_lines():
                    if line.startswith("event: "):
                        event = line.removeprefix("event: ")
                    elif line.startswith("data: "):
                        turn.events.append((event, json.loads(line.removeprefix("data: "))))
                        if event == "delta" and on_first_delta is not None and turn.names.count("delta") == 1:
                            await on_first_delta()
        except httpx2.HTTPError as error:
            turn.cut = f"{type(error).__name__}: {error}"
    return turn


async def messages(cluster: Cluster, conversation: str) -> list[dict]:
    async with httpx2.AsyncClient(base_url=cluster.gateway_url, timeout=30) as client:
        response = await client.get(f"/api/chat/conversations/{conversation}")
        response.raise_for_status()
        return response.json()["conversation"].get("messages", [])


async def retrieve(address: str, query: str) -> list[retrieve_pb.RetrieveResponse]:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = retrieve_grpc.RetrieveServiceStub(channel)
        return [event async for event in stub.Retrieve(retrieve_pb.RetrieveRequest(query=query), timeout=20)]


# -- ingest ----------------------------------------------------------------------------------------------------------


async def test_ingest_killed_mid_sync_leaves_every_note_whole_and_the_next_sync_embeds_nothing_twice(
    cluster: Cluster, record_property
) -> None:
    """kill -9 ingest mid-sync, then sync again: each note old or new, counts match, nothing embedded twice."""
    first = await sync(cluster)
    assert first[-1].done.totals.failed == 0
    connection = await asyncpg.connect(cluster.dsn)
    try:
        last_run = await connection.fetchval("SELECT max(id) FROM ingest_runs")
        # Every note changes and some are new; the sync is killed part way.
        write_vault(cluster.vault, NOTES, version="versiontwo")
        write_vault(cluster.vault, 30, version="versiontwo", start=NOTES)
        killed = await sync(cluster, stop_after_files=30)
        assert not any(e.HasField("done") for e in killed), "the sync should have been killed before its end"
        # A COMMIT sent just before the kill still completes in its server session: read once those are gone.
        await sessions_ended(connection, "secondbrain-ingest")

        rows = await connection.fetch(
            """SELECT f.path, f.body, array_agg(c.content ORDER BY c.chunk_index) AS chunks
               FROM vault_files f LEFT JOIN vault_chunks c ON c.file_id = f.id GROUP BY f.id"""
        )
        versions = {}
        for row in rows:
            version = "versiontwo" if "versiontwo" in row["body"] else "versionone"
            assert version in row["body"] and all(version in chunk for chunk in row["chunks"]), row["path"]
            assert not any(("versionone" if version == "versiontwo" else "versiontwo") in c for c in row["chunks"])
            versions[row["path"]] = version
        assert 0 < list(versions.values()).count("versiontwo") < NOTES + 30, "some notes new, some old"

        await cluster.start("ingest")
        # The restarted process marks the killed sync interrupted as it starts, so the status does not call it
        # running (it stayed 'running' for ever).
        run = await interrupted_run(cluster)
        assert run.error and "stopped before it finished" in run.error
        assert await connection.fetchval("SELECT status FROM ingest_runs WHERE id = $1", last_run + 1) == "interrupted"
        again = await sync(cluster)
        assert (await index_status(cluster)).last_run.state == ingest_pb.SYNC_RUN_STATE_SUCCEEDED
        totals = again[-1].done.totals
        assert totals.failed == 0
        notes = await connection.fetchval("SELECT count(*) FROM vault_files WHERE status = 'indexed'")
        chunks = await connection.fetchval("SELECT count(*) FROM vault_chunks")
        assert notes == NOTES + 30 == totals.files_seen
        assert await connection.fetchval("SELECT count(*) FROM vault_chunks WHERE content LIKE '%versionone%'") == 0
        # Each note's new version was written (embedded) exactly once across the killed sync and the next one, and
        # counted where it was written: a note and its queue row's outcome are stored in one transaction.
        writes = await connection.fetch(
            """SELECT path, count(*) FILTER (WHERE outcome IN ('added', 'updated')) AS writes,
                      sum(embedded) AS embedded
               FROM ingest_queue WHERE run_id > $1 GROUP BY path""",
            last_run,
        )
        stored_before = {path for path, version in versions.items() if version == "versiontwo"}
        assert len(writes) == NOTES + 30
        assert all(row["writes"] == 1 for row in writes), [(r["path"], r["writes"]) for r in writes if r["writes"] != 1]
        assert sum(row["embedded"] for row in writes) == chunks, "every chunk embedded once: none twice, none unseen"
        assert totals.updated + totals.added == NOTES + 30 - len(stored_before)
        record_property(
            "figures",
            f"killed after {sum(1 for e in killed if e.HasField('file'))} files: {len(stored_before)} of "
            f"{len(versions)} notes new, the rest old; the next sync: {totals.updated + totals.added} written, "
            f"{totals.unchanged} unchanged, {totals.chunks_embedded} chunks embedded, {chunks} in the index",
        )
        assert await connection.fetchval("SELECT count(*) FROM vault_chunks WHERE embedding IS NULL") == 0
    finally:
        await connection.close()


# -- the database ----------------------------------------------------------------------------------------------------


async def test_postgres_restart_fails_requests_fast_and_the_services_recover_without_a_restart(
    cluster: Cluster, postgres: Postgres, record_property
) -> None:
    """Restart Postgres under retrieve and chat: UNAVAILABLE with a clear message, then recovery, same processes."""
    pids = {name: cluster.processes[name].pid for name in ("retrieve", "chat")}
    assert await retrieve(cluster.address("retrieve"), "compost in the morning")
    async with grpc.aio.insecure_channel(cluster.address("chat")) as channel:
        chat = chat_grpc.ChatServiceStub(channel)
        await chat.ListConversations(chat_pb.ListConversationsRequest(), timeout=10)

        await postgres.stop()
        failed_in = []
        try:
            for call in (
                lambda: retrieve(cluster.address("retrieve"), "compost in the morning"),
                lambda: chat.ListConversations(chat_pb.ListConversationsRequest(), timeout=20),
            ):
                started = time.monotonic()
                with pytest.raises(grpc.aio.AioRpcError) as failure:
                    await call()
                assert failure.value.code() == grpc.StatusCode.UNAVAILABLE, failure.value
                assert "database" in (failure.value.details() or "")
                failed_in.append(time.monotonic() - started)
        finally:
            await postgres.start()
        restarted = time.monotonic()

        deadline = time.monotonic() + 60
        while True:
            try:
                assert await retrieve(cluster.address("retrieve"), "compost in the morning")
                await chat.ListConversations(chat_pb.ListConversationsRequest(), timeout=10)
                break
            except grpc.aio.AioRpcError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
        record_property(
            "figures",
            f"during the outage retrieve failed in {failed_in[0] * 1000:.0f} ms and chat in {failed_in[1] * 1000:.0f} "
            f"ms; both served again {time.monotonic() - restarted:.1f} s after PostgreSQL was back",
        )
    assert {name: cluster.processes[name].pid for name in pids} == pids
    assert all(cluster.processes[name].returncode is None for name in pids)


# -- a chat turn's upstreams -----------------------------------------------------------------------------------------


async def test_llm_killed_mid_stream_gives_an_error_event_keeps_the_question_and_the_next_turn_works(
    cluster: Cluster,
) -> None:
    """kill -9 the LLM server mid-answer: an `error` event, the question stored, the next turn answered."""
    conversation = await create_conversation(cluster)
    turn = await send(cluster, conversation, "How is the compost kept?", on_first_delta=lambda: cluster.kill("llm"))
    assert turn.names[0] == "sources" and "delta" in turn.names and turn.names[-1] == "error", turn
    assert not turn.cut
    await cluster.start("llm")
    stored = await messages(cluster, conversation)
    assert stored[0]["role"] == "MESSAGE_ROLE_USER" and stored[0]["content"] == "How is the compost kept?"
    assert stored[1]["status"] == "MESSAGE_STATUS_INCOMPLETE"
    after = await send(cluster, conversation, "And the tomatoes?")
    assert after.names[-1] == "done", after


async def test_retrieve_killed_during_a_turn_gives_an_error_event_and_the_next_turn_works(cluster: Cluster) -> None:
    """kill -9 retrieve while a turn waits on it: an `error` event, the question stored, the next turn answered."""
    conversation = await create_conversation(cluster)
    process = cluster.processes["retrieve"]
    os.killpg(process.pid, signal.SIGSTOP)  # frozen: the turn's Retrieve call waits in its socket
    try:
        pending = asyncio.create_task(send(cluster, conversation, "Where is the telescope?"))
        await asyncio.sleep(1.5)
        assert not pending.done()
    finally:
        await cluster.kill("retrieve")
    turn = await pending
    assert turn.names == ["error"], turn
    assert "retrieve" in turn.events[0][1]["message"].lower()
    await cluster.start("retrieve")
    stored = await messages(cluster, conversation)
    assert stored[0]["content"] == "Where is the telescope?"
    after = await send(cluster, conversation, "Where is the telescope?")
    assert after.names[-1] == "done", after


async def test_envoy_restarted_mid_stream_cuts_the_stream_keeps_the_question_and_the_next_turn_works(
    cluster: Cluster,
) -> None:
    """Restart Envoy mid-answer: the client's stream ends without `done`, the question is stored, next turn works."""
    conversation = await create_conversation(cluster)
    turn = await send(cluster, conversation, "What about the violin?", on_first_delta=lambda: cluster.kill("envoy"))
    assert "done" not in turn.names and turn.cut, turn
    await cluster.start("envoy")
    stored = await messages(cluster, conversation)
    assert stored[0]["content"] == "What about the violin?"
    # The chat service saw the client leave and stored what it had, marked as cut short.
    deadline = time.monotonic() + 30
    while stored[1]["status"] == "MESSAGE_STATUS_PENDING" and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        stored = await messages(cluster, conversation)
    assert stored[1]["status"] == "MESSAGE_STATUS_INCOMPLETE", stored[1]
    after = await send(cluster, conversation, "What about the violin?")
    assert after.names[-1] == "done", after


# -- secrets -----------------------------------------------------------------------------------------------------------


async def test_the_provider_key_appears_in_no_log_error_or_response(cluster: Cluster, record_property) -> None:
    """After every fault above: the LLM key is in no service's log, no stored error, no options or UI response."""
    secret = cluster.env()["OPENAI_API_KEY"]
    leaks = [name for name in ("ingest", "retrieve", "chat", "shim", "envoy") if secret in cluster.log(name)]
    async with httpx2.AsyncClient(base_url=cluster.gateway_url, timeout=30) as client:
        bodies = {
            "options": (await client.get("/api/chat/options")).text,
            "settings": (await client.get("/api/chat/settings")).text,
            "index status": (await client.get("/api/index/status")).text,
            "ui": (await client.get("/")).text,
        }
        conversations = (await client.get("/api/chat/conversations")).json().get("conversations", [])
        for conversation in conversations:
            bodies[f"conversation {conversation['id']}"] = (
                await client.get(f"/api/chat/conversations/{conversation['id']}")
            ).text
    leaks += [name for name, body in bodies.items() if secret in body]
    logged = sum(len(cluster.log(name)) for name in ("ingest", "retrieve", "chat", "shim", "envoy"))
    assert "OpenAI" in bodies["options"], "the options list the provider, by name only"
    assert leaks == []
    record_property("figures", f"scanned {logged:,} bytes of logs and {len(bodies)} responses")


# -- metrics -----------------------------------------------------------------------------------------------------------


def metric(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of `name` in a Prometheus exposition whose labels include `labels`."""
    value = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        head, number = line.rsplit(" ", 1)
        if all(f'{key}="{wanted}"' in head for key, wanted in labels.items()):
            value += float(number)
    return value


async def test_each_service_serves_prometheus_metrics_that_saw_the_faults(cluster: Cluster, record_property) -> None:
    """Each service's /metrics (Prometheus): calls by outcome, retrieval stages, ingest progress, provider tokens."""
    async with httpx2.AsyncClient(timeout=10) as client:
        texts = {name: (await client.get(cluster.metrics_url(name))).text for name in ("ingest", "retrieve", "chat")}
        texts["shim"] = (await client.get(f"http://{cluster.address('shim')}/metrics")).text
        hidden = await client.get(f"{cluster.gateway_url}/metrics")
    chat, retrieve, ingest, shim = texts["chat"], texts["retrieve"], texts["ingest"], texts["shim"]
    # chat ran through every fault: its outage refusals, failed turns and answered ones are all counted.
    assert metric(chat, "secondbrain_rpc_requests_total", code="UNAVAILABLE") >= 1
    assert metric(chat, "secondbrain_chat_turns_total", outcome="error") >= 2
    assert metric(chat, "secondbrain_chat_turns_total", outcome="complete") >= 3
    assert metric(chat, "secondbrain_provider_tokens_total", provider="openai", kind="output") > 0
    assert metric(chat, "secondbrain_provider_first_token_seconds_count") >= 3
    assert metric(retrieve, "secondbrain_retrieve_stage_seconds_count", stage="embed") >= 1
    assert metric(ingest, "secondbrain_ingest_files_total") >= 1
    assert "secondbrain_ingest_queue_depth" in ingest
    assert metric(shim, "secondbrain_http_requests_total", status="200") >= 1
    assert hidden.status_code == 404, "the metrics are not served to browsers through Envoy"
    record_property("figures", ", ".join(f"{name} {len(text.splitlines())} lines" for name, text in texts.items()))


# -- chat itself (last: a restarted chat starts its counters again, which the metrics test above reads) ---------------


async def test_chat_killed_mid_turn_gives_an_error_event_and_the_answer_keeps_its_text_and_fails_soon(
    cluster: Cluster, record_property
) -> None:
    """kill -9 chat mid-answer: the REST stream ends with a retryable `error` event (not a bare close), and once chat
    is back the answer is `incomplete` with the text it had streamed, not `pending` for a quarter of an hour."""
    cluster.llm_delay, cluster.llm_deltas = 0.3, 60  # an answer still streaming once a heartbeat has stored its text
    await cluster.kill("llm")
    await cluster.start("llm")
    conversation = await create_conversation(cluster)
    connection = await asyncpg.connect(cluster.dsn)
    try:

        async def kill_once_text_is_stored() -> None:
            query = "SELECT content FROM chat_messages WHERE conversation_id = $1 AND role = 'assistant'"
            async with asyncio.timeout(30):
                while not await connection.fetchval(query, uuid.UUID(conversation)):  # noqa: ASYNC110 - another server's state
                    await asyncio.sleep(0.1)
            await cluster.kill("chat")

        turn = await send(cluster, conversation, "How is the compost kept?", on_first_delta=kill_once_text_is_stored)
        assert not turn.cut, turn
        assert turn.names[0] == "sources" and "delta" in turn.names and turn.names[-1] == "error", turn.names
        error = turn.events[-1][1]
        assert error["retryable"] is True and error["code"] == "UNAVAILABLE", error
        assert "chat" in error["message"].lower(), error
        streamed = "".join(data["text"] for name, data in turn.events if name == "delta")

        killed = time.monotonic()
        await cluster.start("chat")
        # The shim's channel to chat reconnects in its own time (a 503 until then); the answer's lease then runs out.
        async with asyncio.timeout(60):
            while True:
                try:
                    stored = await messages(cluster, conversation)
                except httpx2.HTTPStatusError as failed:
                    assert failed.response.status_code == 503, failed
                    stored = []
                if stored and stored[1]["status"] != "MESSAGE_STATUS_PENDING":
                    break
                await asyncio.sleep(0.5)
        assert stored[0]["content"] == "How is the compost kept?"
        assert stored[1]["status"] == "MESSAGE_STATUS_INCOMPLETE", stored[1]
        assert "stopped" in stored[1]["error"], stored[1]
        kept = stored[1]["content"]
        assert kept and streamed.startswith(kept.strip().split()[0]), (kept, streamed)
        record_property(
            "figures",
            f"the answer was closed {time.monotonic() - killed:.1f} s after the kill, keeping {len(kept)} of the "
            f"{len(streamed)} characters streamed",
        )
        cluster.llm_delay, cluster.llm_deltas = Cluster.llm_delay, Cluster.llm_deltas
        await cluster.kill("llm")
        await cluster.start("llm")
        after = await send(cluster, conversation, "And the tomatoes?")
        assert after.names[-1] == "done", after.names
    finally:
        await connection.close()
