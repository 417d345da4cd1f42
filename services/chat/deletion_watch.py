"""A stored turn stops when its conversation is deleted while the answer is being written.

Whichever chat process took the DELETE (replicas share nothing but the database, and chat holds no listener, so it
runs behind a transaction pooler), the turn's own process notices within a poll that its answer row is gone, stops
the step in flight (which closes the provider's stream, so the upstream call stops costing) and ends the stream
with NOT_FOUND saying why. Before, the stream ran on to `done` with the id of a message that no longer existed, and
the provider was paid for an answer nobody could keep.

The same poll is the answer's lease: each renews the row's `alive_at` and stores the text streamed so far, so a chat
process killed mid-turn leaves an answer that any chat process closes as incomplete, with that text, once the lease
has run out (`ANSWER_LEASE_SECONDS`; before, it stayed pending for 15 minutes and the text was lost).

The turn's events are taken one step at a time in a task of their own, raced against the watch: the caller's task
is never cancelled on the watch's behalf, so a client's own cancel stays the only one it sees.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from secondbrain.chat import store
from secondbrain.db import Database
from secondbrain.errors import NotFound

log = logging.getLogger(__name__)
T = TypeVar("T")

# How often a streaming turn renews its answer row's lease (and so sees whether the row is gone): one primary-key
# update a second per turn in flight.
POLL_SECONDS = 1.0
# An answer whose lease has not been renewed for this long belongs to a chat process that stopped: twenty polls
# missed, so a busy database or event loop does not close a live turn (and a live turn closed anyway is put right
# when it finishes, since its outcome overwrites the row).
ANSWER_LEASE_SECONDS = 20.0


class ConversationDeleted(NotFound):
    """The turn's conversation was deleted while its answer was being written."""


class DeletionWatch:
    """Watches one turn's answer row (`message_id`) while `until_deleted` passes the turn's events on."""

    def __init__(
        self,
        db: Database,
        conversation_id: str,
        message_id: int,
        streamed: Callable[[], str] = str,
        every: float = POLL_SECONDS,
    ) -> None:
        """`streamed` gives the answer's text so far, stored with each renewal in which it grew."""
        self.db = db
        self.conversation_id = conversation_id
        self.message_id = message_id
        self.streamed = streamed
        self.every = every

    async def until_deleted(self, events: AsyncIterator[T]) -> AsyncIterator[T]:
        """`events`, until the conversation is deleted: then the step in flight is cancelled (inside `events`,
        which closes what it holds) and ConversationDeleted is raised."""
        gone = asyncio.create_task(self._deleted(), name=f"deletion watch {self.message_id}")
        step: asyncio.Future[T] | None = None
        try:
            while True:
                step = asyncio.ensure_future(anext(events))
                await asyncio.wait({step, gone}, return_when=asyncio.FIRST_COMPLETED)
                if not step.done():
                    raise ConversationDeleted(
                        f"the conversation {self.conversation_id} was deleted while its answer was being written; "
                        "the answer stopped"
                    )
                finished, step = step, None
                try:
                    event = finished.result()
                except StopAsyncIteration:
                    return
                yield event
        finally:
            gone.cancel()
            if step is not None and not step.done():
                # Cancelled in `events` itself, and waited for: it closes its provider stream before anyone
                # touches `events` again.
                step.cancel()
                await asyncio.wait({step})

    async def _deleted(self) -> None:
        """Renews the answer's lease until its row is gone, then returns; a failed renewal is logged and tried again
        (never a false stop)."""
        stored = ""
        while True:
            await asyncio.sleep(self.every)
            text = self.streamed()
            try:
                async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
                    changed = text if text != stored else None
                    if not await store.keep_answer_alive(connection, self.message_id, changed):
                        return
                stored = text
            except Exception as error:  # the turn goes on; only a row known to be gone stops it
                log.warning("could not renew a turn's answer lease", extra={"error": str(error)})
