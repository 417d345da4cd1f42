"""Several ingest processes share one sync through the Postgres work queue, and each note is processed once."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from secondbrain.config import load_config
from secondbrain.db import Database
from secondbrain.ingest import queue as queue_module
from secondbrain.ingest import store
from secondbrain.ingest.events import FileDone, Outcome, SyncFinished
from secondbrain.ingest.pipeline import Ingestor
from secondbrain.ingest.queue import MAX_CLAIMS
from secondbrain.ingest.queue_worker import run_queue_worker
from secondbrain.ingest.server import build_ingestor
from tests.ingest.conftest import EMBEDDING_DIMENSION, Vault, embedded_texts, embedding_env
from tests.wire import OpenAIServer, Reply

NOTES = 40


@dataclass
class Shared:
    """One database and one embedding server, with as many ingest "processes" as a test makes."""

    vault: Vault
    db: Database
    embedder: OpenAIServer

    def worker(self, claim_batch: int = 4) -> Ingestor:
        ingestor = build_ingestor(load_config(), self.db, embedding_env(self.embedder))
        ingestor.queue.claim_batch = claim_batch
        return ingestor

    def embedded_texts(self) -> list[str]:
        return embedded_texts(self.embedder)

    async def sync_helped(self, coordinator: Ingestor, helper: Ingestor) -> list[object]:
        """A sync run by `coordinator` while `helper` listens for queued work, as another ingest process would."""
        helping = asyncio.create_task(run_queue_worker(helper))
        try:
            return [event async for event in coordinator.sync(self.vault.root)]
        finally:
            helping.cancel()
            with pytest.raises(asyncio.CancelledError):
                await helping


@pytest.fixture
async def shared(vault: Vault, ingest_environment: None) -> AsyncIterator[Shared]:
    async with OpenAIServer(dimensions=EMBEDDING_DIMENSION) as embedder:
        db = await Database.open(load_config().settings)
        try:
            yield Shared(vault, db, embedder)
        finally:
            await db.close()


async def test_two_workers_share_a_sync_and_process_each_note_exactly_once(shared: Shared) -> None:
    for i in range(NOTES):
        shared.vault.write(f"Notes/Note {i:02d}.md", f"# Note {i}\n\nThe {i}th note says something about topic {i}.\n")
    # Slow embeddings, so both workers are busy at once and the split is decided by the queue, not by speed.
    shared.embedder.script.default = Reply(delay=0.05)
    coordinator, helper = shared.worker(), shared.worker()
    events = await shared.sync_helped(coordinator, helper)

    done = [event for event in events if isinstance(event, FileDone)]
    paths = collections.Counter(event.path for event in done)
    assert len(paths) == NOTES and set(paths.values()) == {1}, "every note reported once"
    assert {event.outcome for event in done} == {Outcome.ADDED}
    finished = events[-1]
    assert isinstance(finished, SyncFinished) and finished.totals.added == NOTES

    async with shared.db.pool.acquire() as connection:
        rows = await connection.fetch("SELECT path, claimed_by, claims, state FROM ingest_queue")
        chunks = await connection.fetchval("SELECT count(*) FROM vault_chunks WHERE embedding IS NOT NULL")
    assert sorted(row["path"] for row in rows) == sorted(f"Notes/Note {i:02d}.md" for i in range(NOTES))
    assert {row["state"] for row in rows} == {"done"} and {row["claims"] for row in rows} == {1}
    by_worker = collections.Counter(row["claimed_by"] for row in rows)
    assert set(by_worker) == {coordinator.queue.worker_name, helper.queue.worker_name}, f"both worked: {by_worker}"
    texts = shared.embedded_texts()
    assert len(texts) == len(set(texts)) == chunks, "each chunk was embedded once, by one of the two"


async def test_a_claim_whose_worker_died_is_taken_over_after_its_lease(shared: Shared) -> None:
    shared.vault.write("Lost.md", "# Lost\n\nA note whose first worker died.\n")
    coordinator = shared.worker()
    async with shared.db.pool.acquire() as connection:
        run_id = await store.start_run(connection, str(shared.vault.root))
        await store.enqueue(connection, run_id, str(shared.vault.root), False, ["Lost.md"])
        # A worker claims it and dies: its claim stays behind.
        assert len(await store.claim(connection, "dead-worker", 10, 600.0)) == 1
        assert await store.claim(connection, "another", 10, 600.0) == [], "a live claim is not taken"
        taken = await store.claim(connection, coordinator.queue.worker_name, 10, 0.0)
    assert [item.path for item in taken] == ["Lost.md"], "an expired claim is taken over"
    assert await coordinator.queue.process_claimed(taken, False) == 1
    async with shared.db.pool.acquire() as connection:
        row = await connection.fetchrow("SELECT state, outcome, claims FROM ingest_queue")
        assert not await store.finish_item(connection, taken[0].id, "dead-worker", "added", 1, 1, "", [])
    assert (row["state"], row["outcome"], row["claims"]) == ("done", "added", 2)


async def test_a_file_every_worker_died_on_fails_after_its_last_try(shared: Shared) -> None:
    """Its lease runs out again and again (each worker killed on it): the fourth claim finishes it as failed, so the
    sync following it ends, rather than one more worker trying every ten minutes for ever."""
    shared.vault.write("Deadly.md", "# Deadly\n\nA note every worker dies on.\n")
    coordinator = shared.worker()
    async with shared.db.pool.acquire() as connection:
        run_id = await store.start_run(connection, str(shared.vault.root))
        await store.enqueue(connection, run_id, str(shared.vault.root), False, ["Deadly.md"])
        for attempt in range(MAX_CLAIMS):
            assert len(await store.claim(connection, f"killed-{attempt}", 10, 0.0)) == 1
        await connection.execute("UPDATE ingest_queue SET claimed_at = now() - interval '1 hour'")  # the last lease
    assert await coordinator.queue.work(run_id) == 1
    async with shared.db.pool.acquire() as connection:
        row = await connection.fetchrow("SELECT state, outcome, error, claims FROM ingest_queue")
    assert (row["state"], row["outcome"], row["claims"]) == ("done", "failed", MAX_CLAIMS + 1)
    assert f"started {MAX_CLAIMS} times and never finished" in row["error"]
    assert shared.embedded_texts() == [], "not tried a fourth time"
    reasons = await failed_reasons_of(shared)
    assert "never finished" in reasons["Deadly.md"], "the index status says so too"


async def test_a_worker_renews_its_claims_while_a_slow_batch_runs(
    shared: Shared, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch slower than the lease is not taken over by another worker (work done twice), nor counted as a try
    that failed."""
    monkeypatch.setattr(queue_module, "LEASE_SECONDS", 0.5)
    monkeypatch.setattr(queue_module, "RENEW_SECONDS", 0.1)
    for i in range(4):
        shared.vault.write(f"Slow {i}.md", f"# Slow {i}\n\nA note embedded slowly.\n")
    shared.embedder.script.default = Reply(delay=1.5)  # each embedding call outlives the lease three times
    events = await shared.sync_helped(shared.worker(claim_batch=4), shared.worker())
    assert {event.outcome for event in events if isinstance(event, FileDone)} == {Outcome.ADDED}
    async with shared.db.pool.acquire() as connection:
        rows = await connection.fetch("SELECT claimed_by, claims FROM ingest_queue")
    assert {row["claims"] for row in rows} == {1}, "never claimed again"
    assert len({row["claimed_by"] for row in rows}) == 1, "one worker did the batch"


async def test_a_worker_failing_on_a_batch_finishes_its_files_as_failed(
    shared: Shared, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error the worker did not foresee, on one file, fails the files of its batch not yet stored (here Alpha,
    prepared and waiting to be embedded with the rest, and Gamma, not read yet), with a reason, instead of leaving them
    claimed until the lease runs out (the sync following them waited that long)."""
    for name in ("Alpha.md", "Beta.md", "Gamma.md"):
        shared.vault.write(name, f"# {name}\n\nA note.\n")
    worker = shared.worker(claim_batch=10)
    prepare = worker.indexer.prepare

    def breaks_on_beta(path: str, *args: object):
        if path == "Beta.md":
            raise RuntimeError("unforeseen")
        return prepare(path, *args)

    monkeypatch.setattr(worker.indexer, "prepare", breaks_on_beta)
    events = await asyncio.wait_for(_collect(worker.sync(shared.vault.root)), 60)
    done = {event.path: event for event in events if isinstance(event, FileDone)}
    assert set(done) == {"Alpha.md", "Beta.md", "Gamma.md"}
    for event in done.values():
        assert event.outcome == Outcome.FAILED
        assert "indexing it failed (RuntimeError)" in event.error
    async with shared.db.pool.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM ingest_queue WHERE state <> 'done'") == 0


async def _collect(events: AsyncIterator[object]) -> list[object]:
    return [event async for event in events]


async def failed_reasons_of(shared: Shared) -> dict[str, str]:
    async with shared.db.pool.acquire() as connection:
        rows = await connection.fetch("SELECT path, status_reason FROM vault_files WHERE status = 'failed'")
    return {row["path"]: row["status_reason"] for row in rows}


async def test_a_note_is_stored_with_its_queue_outcome_or_not_at_all(
    shared: Shared, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that dies after storing a note but before recording it would leave a note no sync counts as
    written; the two are one transaction, so dying in between leaves neither."""
    shared.vault.write("Atomic.md", "# Atomic\n\nStored together with its outcome, or not at all.\n")
    worker = shared.worker()
    async with shared.db.pool.acquire() as connection:
        run_id = await store.start_run(connection, str(shared.vault.root))
        await store.enqueue(connection, run_id, str(shared.vault.root), False, ["Atomic.md"])
        claimed = await store.claim(connection, worker.queue.worker_name, 10, 600.0)

    async def dies(*args: object) -> bool:
        raise ConnectionResetError("the worker died")

    monkeypatch.setattr(store, "finish_item", dies)
    with pytest.raises(ConnectionResetError):
        await worker.queue.process_claimed(claimed, False)
    async with shared.db.pool.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM vault_files") == 0, "the note went with its outcome"
        assert await connection.fetchval("SELECT state FROM ingest_queue") == "claimed"
    monkeypatch.undo()
    # Another worker takes the claim over and does both.
    another = shared.worker()
    async with shared.db.pool.acquire() as connection:
        taken = await store.claim(connection, another.queue.worker_name, 10, 0.0)
    assert await another.queue.process_claimed(taken, False) == 1
    async with shared.db.pool.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM vault_files WHERE path = 'Atomic.md'") == 1
        assert await connection.fetchval("SELECT outcome FROM ingest_queue") == "added"


async def test_a_file_finished_out_of_order_is_still_reported(shared: Shared, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers finishing at once can commit in the other order than their done_seq: the sync still reports
    (and waits for) both."""
    for name in ("First.md", "Second.md"):
        shared.vault.write(name, f"# {name}\n\nA note.\n")
    follower = shared.worker()

    async def no_work(run_id: int | None = None) -> int:
        return 0  # the test plays the other workers

    monkeypatch.setattr(follower.queue, "work", no_work)
    events: list[object] = []

    async def follow() -> None:
        async for event in follower.sync(shared.vault.root):
            events.append(event)

    following = asyncio.create_task(follow())
    async with shared.db.pool.acquire() as early, shared.db.pool.acquire() as late:
        for _ in range(100):  # until the sync has queued its files
            if claimed := await store.claim(early, "other", 10, 600.0):
                break
            await asyncio.sleep(0.05)
        first, second = sorted(claimed, key=lambda item: item.path)
        async with early.transaction():  # takes the lower done_seq, commits last
            await store.finish_item(early, first.id, "other", "added", 1, 1, "", [])
            await store.finish_item(late, second.id, "other", "added", 1, 1, "", [])
            await asyncio.sleep(0.5)  # the follower sees the second, and moves its mark past the first
    await asyncio.wait_for(following, timeout=10)
    done = [e for e in events if isinstance(e, FileDone)]
    assert sorted(e.path for e in done) == ["First.md", "Second.md"]
    assert isinstance(events[-1], SyncFinished)
