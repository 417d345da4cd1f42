"""The work queue: a sync's changed files, shared by every ingest process listening.

A sync queues the files that may have changed; this process and every other one listening (see `queue_worker`)
claim them a batch at a time, index them, and record each outcome on its queue row in the transaction that stores the
note. A claim older than its lease belongs to a worker that died, and is claimed again. The sync follows the rows as
they are done, whoever did them, and reports each file once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import asyncpg

from secondbrain.db import Database
from secondbrain.db.database import lost_database
from secondbrain.errors import ConfigError
from secondbrain.ingest import store
from secondbrain.ingest.events import FileDone, Outcome, Totals
from secondbrain.ingest.indexing import GROUP_NOTES, NoteIndexer
from secondbrain.ingest.note_paths import note_path
from secondbrain.ingest.vault_walk import VaultFile
from secondbrain.vault_config import IngestSection, load_vault_config

log = logging.getLogger(__name__)

# Files a worker claims from the queue at once: several groups, so embedding one overlaps preparing the next.
CLAIM_BATCH = 4 * GROUP_NOTES
# A claim older than this is taken to belong to a worker that died, and is claimed again.
LEASE_SECONDS = 600.0
# A worker renews the claims it is working on this often, well within the lease.
RENEW_SECONDS = LEASE_SECONDS / 6
# A file claimed this many times without being finished fails rather than being claimed again.
MAX_CLAIMS = 3
# How often a sync looks for files other workers finished.
FOLLOW_SECONDS = 0.1


class WorkQueue:
    """This process's part in the queue: queueing a sync's files, claiming and indexing them, following the run."""

    def __init__(self, db: Database, indexer: NoteIndexer, claim_batch: int = CLAIM_BATCH) -> None:
        self.db = db
        self.indexer = indexer
        self.claim_batch = claim_batch
        # Names this process's claims in the queue: the pod (host) and the process.
        self.worker_name = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"

    async def queue_and_follow(
        self, run_id: int, root: Path, force: bool, changed: dict[str, str], totals: Totals
    ) -> AsyncIterator[FileDone]:
        """Queue the `changed` files (name on disk -> note path), work on the queue with whichever other ingest
        processes are listening, and report each file as it is finished, whoever finished it."""
        async with self.db.pool.acquire() as connection:
            await store.enqueue(connection, run_id, str(root), force, list(changed))
        helping = asyncio.create_task(self.work(run_id))
        after, remaining, idle_since = 0, len(changed), time.monotonic()
        reported: set[str] = set()
        rescanned = idle_since
        try:
            while remaining:
                async with self.db.pool.acquire() as connection:
                    finished = await store.finished_since(connection, run_id, after)
                # A run may queue twice (attachments read again once its notes are written): the first call's rows are
                # not this one's.
                finished = [item for item in finished if item.path in changed and item.path not in reported]
                for item in finished:
                    reported.add(item.path)
                    after, remaining = max(after, item.done_seq), remaining - 1
                    totals.chunks_embedded += item.embedded
                    yield totals.report(
                        changed[item.path], Outcome(item.outcome), item.chunks, item.error, item.warnings, item.embedded
                    )
                if finished:
                    idle_since = time.monotonic()
                    continue
                if time.monotonic() - max(idle_since, rescanned) > 1.0:
                    # Once a quiet second, read the whole run again: a row can commit after one with a later
                    # done_seq (two workers finishing at once), below the mark this follower has passed.
                    after, rescanned = 0, time.monotonic()
                if helping.done():
                    helping.result()  # this process's own work failing ends the sync with its error
                    if time.monotonic() - idle_since > 1.0:
                        # Other workers hold the rest; claiming again takes over any whose lease ran out.
                        helping, idle_since = asyncio.create_task(self.work(run_id)), time.monotonic()
                await asyncio.sleep(FOLLOW_SECONDS)
        finally:
            helping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await helping

    async def work(self, run_id: int | None = None) -> int:
        """Claim queued files (of `run_id`, or of any sync) and process them until none is left to claim; returns
        how many this process finished. Every ingest process runs this when a sync queues work."""
        finished = 0
        while True:
            async with self.db.pool.acquire() as connection:
                items = await store.claim(connection, self.worker_name, self.claim_batch, LEASE_SECONDS, run_id)
            if not items:
                return finished
            # A file whose every worker died on it (killed, out of memory) is not claimed for ever, once a lease. A
            # worker alive renews its claims (below), so only a claim nobody renewed comes back this often.
            worn = [item for item in items if item.claims > MAX_CLAIMS]
            if worn:
                reason = (
                    f"indexing it was started {MAX_CLAIMS} times and never finished (the worker stopped each time); "
                    "the ingest service's log has details"
                )
                async with self.db.pool.acquire() as connection:
                    for item in worn:
                        await store.mark_failed(connection, note_path(item.path), reason, 0, datetime.now(UTC))
                        await self._fail(connection, item, reason)
                finished += len(worn)
                items = [item for item in items if item.claims <= MAX_CLAIMS]
            renewing = asyncio.create_task(self._renew(items))
            try:
                for force in (False, True):
                    batch = [item for item in items if item.force is force]
                    if batch:
                        finished += await self.process_claimed(batch, force)
            finally:
                renewing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewing

    async def _renew(self, items: list[store.QueueItem]) -> None:
        """Renew the claims on `items` while they are worked on: a batch slower than the lease (a note of thousands
        of chunks, embedding on a busy CPU) is not taken over by another worker, nor counted as a try that failed."""
        while True:
            await asyncio.sleep(RENEW_SECONDS)
            try:
                async with self.db.pool.acquire() as connection:
                    await store.renew_claims(connection, self.worker_name, [item.id for item in items])
            except Exception:  # the next renewal may get through; the lease covers the gap
                log.warning("could not renew the claims on queued files", exc_info=True)

    async def process_claimed(self, items: list[store.QueueItem], force: bool) -> int:
        """Index claimed files and record each one's outcome on its row; returns how many were finished."""
        # A queued path is the name on disk (see queue_and_follow); the note it holds goes by its NFC spelling.
        by_path = {note_path(item.path): item for item in items}
        files, finished = [], 0
        done: set[str] = set()  # the note paths whose rows are finished
        for item in items:
            vault = Path(item.vault_path)
            try:
                stat = await asyncio.to_thread((vault / item.path).stat)
            except OSError as error:
                reason = f"{item.path} can no longer be read ({error.strerror or error}); the next sync catches up"
                async with self.db.pool.acquire() as connection:
                    await self._fail(connection, item, reason)
                done.add(note_path(item.path))
                finished += 1
                continue
            files.append(VaultFile(note_path(item.path), vault, stat.st_size, stat.st_mtime, on_disk=item.path))
        async with self.db.pool.acquire() as connection:
            index = await store.fetch_files(connection, [file.path for file in files])

        async def record(connection: asyncpg.Connection, event: FileDone) -> None:
            kept = await store.finish_item(
                connection,
                by_path[event.path].id,
                self.worker_name,
                event.outcome.value,
                event.chunks,
                event.embedded,
                event.error,
                list(event.warnings),
            )
            if not kept:
                log.warning("a queued file's claim was taken over before it finished", extra={"path": event.path})

        limits = await asyncio.to_thread(_ingest_limits, Path(items[0].vault_path)) if items else IngestSection()
        try:
            async for event in self.indexer.index_files(files, index, Totals(), force, record, limits):
                if not event.recorded:
                    async with self.db.pool.acquire() as connection:
                        await record(connection, event)
                done.add(event.path)
                finished += 1
        except Exception as error:
            if lost_database(error) is not None:
                raise  # nothing can be recorded; the claims' leases run out and another worker takes them
            # The batch's other files are not left claimed, or the sync following them would wait out the lease.
            log.exception("indexing claimed files failed", extra={"paths": sorted(set(by_path) - done)})
            reason = f"indexing it failed ({type(error).__name__}); the ingest service's log has details"
            async with self.db.pool.acquire() as connection:
                for path in sorted(set(by_path) - done):
                    await self._fail(connection, by_path[path], reason)
                    finished += 1
        return finished

    async def _fail(self, connection: asyncpg.Connection, item: store.QueueItem, reason: str) -> None:
        """Finish a claimed row as failed, saying why, without a note stored for it."""
        await store.finish_item(connection, item.id, self.worker_name, "failed", 0, 0, reason, [])


def _ingest_limits(vault: Path) -> IngestSection:
    """The vault's ingest settings (max_chunks_per_note, max_front_matter_bytes), read afresh as its sync read them
    (a sync refuses a vault whose secondbrain.json is bad, so the defaults stand in only for one broken since)."""
    try:
        return load_vault_config(vault).ingest
    except ConfigError:
        return IngestSection()
