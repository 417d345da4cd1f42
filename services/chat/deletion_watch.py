"""A stored turn stops when its conversation is deleted while the answer is being written.

Whichever chat process took the DELETE (replicas share nothing but the database, and chat holds no listener, so it
runs behind a transaction pooler), the turn's own process notices within a poll that its answer row is gone, stops
the step in flight (which closes the provider's stream, so the upstream call stops costing) and ends the stream
with NOT_FOUND saying why. Before, the stream ran on to `done` with the id of a message that no longer existed, and
the provider was paid for an answer nobody could keep.

The turn's events are taken one step at a time in a task of their own, raced against the watch: the caller's task
is never cancelled on the watch's behalf, so a client's own cancel stays the only one it sees.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TypeVar

from secondbrain.chat import store
from secondbrain.db import Database
from secondbrain.errors import NotFound

log = logging.getLogger(__name__)
T = TypeVar("T")

# How often a streaming turn looks for its answer row: one primary-key lookup a second per turn in flight.
POLL_SECONDS = 1.0


class ConversationDeleted(NotFound):
    """The turn's conversation was deleted while its answer was being written."""


class DeletionWatch:
    """Watches one turn's answer row (`message_id`) while `until_deleted` passes the turn's events on."""

    def __init__(self, db: Database, conversation_id: str, message_id: int, every: float = POLL_SECONDS) -> None:
        self.db = db
        self.conversation_id = conversation_id
        self.message_id = message_id
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
        """Returns once the answer row is gone; a failed look is logged and tried again (never a false stop)."""
        while True:
            await asyncio.sleep(self.every)
            try:
                async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
                    if not await store.answer_exists(connection, self.message_id):
                        return
            except Exception as error:  # the turn goes on; only a row known to be gone stops it
                log.warning("could not check whether a turn's conversation still exists", extra={"error": str(error)})
