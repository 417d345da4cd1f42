"""Every ingest process helps with every sync: it listens for queued work and claims it.

A sync (started on any ingest process, or in a CLI process) walks the vault and queues the files that may have
changed; this worker, running in each ingest server, wakes on the queue's notification (or every few seconds, in
case one was missed) and works through what it can claim (`queue.WorkQueue.work`). Claims use FOR UPDATE SKIP
LOCKED, so each file is processed by one process. A worker whose embedding model differs from the index's claims
nothing: vectors of two models are never mixed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from secondbrain.db.embedding_model import current_model
from secondbrain.errors import SecondbrainError
from secondbrain.ingest import store
from secondbrain.ingest.pipeline import Ingestor
from secondbrain.service.observe import INGEST_QUEUE_DEPTH

log = logging.getLogger(__name__)

# A notification can be missed (a reconnect, say); an idle worker looks at the queue this often anyway.
IDLE_POLL_SECONDS = 5.0


async def run_queue_worker(ingestor: Ingestor) -> None:
    """Work on the queue whenever there is work, until cancelled."""
    wake = asyncio.Event()
    wake.set()  # look once at start: work may have been queued while this process was down

    def wake_up(*_: object) -> None:
        wake.set()

    async with ingestor.db.pool.acquire() as listener:
        await listener.add_listener(store.QUEUE_CHANNEL, wake_up)
        try:
            mismatch_logged = False
            while True:
                # asyncio.timeout, not wait_for: on Python 3.11, wait_for swallows a cancel that arrives when the
                # event is already set, and the worker would outlive its server.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(IDLE_POLL_SECONDS):
                        await wake.wait()
                wake.clear()
                try:
                    model = await ingestor.model()
                    async with ingestor.db.pool.acquire() as connection:
                        current = await current_model(connection)
                    if current is not None and current != model:
                        if not mismatch_logged:
                            log.warning(
                                "not helping with syncs: this process embeds with another model than the index",
                                extra={"mine": model.identity, "index": current.identity},
                            )
                            mismatch_logged = True
                        continue
                    mismatch_logged = False
                    finished = await ingestor.queue.work()
                    async with ingestor.db.pool.acquire() as connection:
                        INGEST_QUEUE_DEPTH.set(await store.queue_depth(connection))
                    if finished:
                        log.info("worked on the sync queue", extra={"files": finished})
                except SecondbrainError as error:
                    log.warning("sync queue work failed", extra={"error": str(error)})
                except Exception:
                    log.exception("sync queue work failed")
        finally:
            try:
                await listener.remove_listener(store.QUEUE_CHANNEL, wake_up)
            except Exception:
                log.warning(
                    "could not stop listening for queued syncs; the connection goes back to the pool, which resets it",
                    exc_info=True,
                )
