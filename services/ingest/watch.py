"""Watching a vault: an edit, a new note or a deletion is taken into the index within a second or so of being saved.

Where the watcher lives: in the ingest service, the process that owns the index, and there only while someone
follows it. A `SyncVault` call with `watch` set syncs and then keeps its stream open; while at least one such stream
is open, the service watches that vault (one watcher per vault, however many follow it), syncs whatever changes,
and sends each changed note down every open stream. `secondbrain up` follows its own ingest service this way (the
one line per change it prints is that stream), and so does `secondbrain ingest --watch`, against a running service
or the one it starts in its own process: one watcher, one idea, wherever the command runs.

Why the service and not the command: the service is what `GetIndexStatus` asks, so `watching`, `pending_changes`
and `last_change` are the truth of the process doing the work, not a report a command may stop sending; and a
sync the watcher starts takes the same sync lock and queue as every other, so a watched change and a `SyncVault`
from elsewhere take turns instead of racing. Why only while followed: on Kubernetes ingest runs alone beside
git-sync, which publishes each commit by swapping a symlink to a new checkout, a change a file watcher on the old
checkout never sees; there the periodic sync (SECONDBRAIN_SYNC_INTERVAL_SECONDS) is what keeps the index in step,
and an ingest service nobody follows watches nothing and says so (`watching` false). The same service, followed,
watches: nothing else to configure.

Each round is an ordinary incremental sync (unchanged files cost a stat), so a rename, a folder moved or a
secondbrain.json edited is handled like any other change, and what the watcher reports is what the sync did.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from secondbrain.errors import FailedPrecondition, SecondbrainError
from secondbrain.file_kinds import is_attachment
from secondbrain.ingest.events import FileDone, Outcome
from secondbrain.ingest.note_paths import note_path
from secondbrain.ingest.pipeline import Ingestor, SyncBusy

if TYPE_CHECKING:
    from watchfiles import Change

log = logging.getLogger(__name__)

# watchfiles waits this long after a change for more before it reports them together (an editor's save is often
# a write and a rename), and polls its Rust side this often.
DEBOUNCE_MS = 300
STEP_MS = 50
# Notes counted as pending in one folder made or moved into the vault.
MAX_FOLDER_NOTES = 10_000
# How long the file watcher is given to register before a change made after `start` is sure to be seen.
REGISTER_SECONDS = 0.2
# How long a watched round waits when another sync holds the lock, before it tries again.
BUSY_RETRY_SECONDS = 1.0
# Changes a follower that reads slowly may fall behind by; past it, it misses some lines (never the index).
FOLLOWER_BACKLOG = 1000


def relevant_in(root: str) -> Callable[[Change, str], bool]:
    """Whether a change to `path` (absolute, under `root`) can change the index: a note, the vault's settings, or
    a folder (made, moved or deleted, it can hold notes whose own events a watcher added late would miss; a deleted
    path may have been one). Hidden folders do not count, but for .claude, where personas live."""
    from watchfiles import Change

    prefix = root.rstrip("/") + "/"

    def relevant(change: Change, path: str) -> bool:
        parts = path.removeprefix(prefix).split("/")
        if any(part.startswith(".") for part in parts) and parts[0] != ".claude":
            return False
        if _indexed_name(parts[-1]) or path.removeprefix(prefix) == "secondbrain.json":
            return True
        return change == Change.deleted or Path(path).is_dir()

    return relevant


def _notes_changed(root: str, paths: list[str]) -> set[str]:
    """The note paths (vault-relative, NFC) the changed `paths` name: each note or the settings, and the notes
    inside each folder (up to MAX_FOLDER_NOTES of them; the sync finds any more)."""
    notes: set[str] = set()
    for path in paths:
        relative = path.removeprefix(root).lstrip("/")
        if _indexed_name(relative) or relative == "secondbrain.json":
            notes.add(note_path(relative))
            continue
        folder = Path(path)
        if not folder.is_dir() or folder.is_symlink():
            continue
        for index, inner in enumerate(inner for inner in folder.rglob("*") if _indexed_name(inner.name)):
            if index >= MAX_FOLDER_NOTES:
                break
            inside = inner.relative_to(root).as_posix()
            if not any(part.startswith(".") for part in inside.split("/")):
                notes.add(note_path(inside))
    return notes


def _indexed_name(name: str) -> bool:
    """A note's name, or an attachment's (whether attachments are indexed is the sync's to say)."""
    return name.lower().endswith(".md") or is_attachment(name)


class VaultWatcher:
    """Watches one vault while it has followers, syncing what changes; what each round did goes to every follower."""

    def __init__(self, ingestor: Ingestor, vault: Path, replace_vault: bool) -> None:
        self.ingestor = ingestor
        self.vault = vault
        self.replace_vault = replace_vault
        self.followers: set[asyncio.Queue[FileDone]] = set()
        # Paths seen changing that no sync has taken yet, and those the round under way took.
        self.pending: set[str] = set()
        self.taken: set[str] = set()
        self.last_change: datetime | None = None
        self._changed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def watching(self) -> bool:
        return bool(self._tasks)

    @property
    def pending_changes(self) -> int:
        return len(self.pending | self.taken)

    async def start(self) -> None:
        """Start watching; returns once the file watcher is in place, so a change made after it is seen."""
        if self._tasks:
            return
        self._tasks = [asyncio.create_task(self._watch_files()), asyncio.create_task(self._sync_rounds())]
        # The watcher registers as its task first runs; one that cannot (no such folder, no inotify watches left)
        # ends its task at once.
        await asyncio.sleep(REGISTER_SECONDS)
        files = self._tasks[0]
        if files.done():
            error = None if files.cancelled() else files.exception()
            await self.stop()
            raise FailedPrecondition(f"cannot watch {self.vault} for changes: {error}")

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.pending.clear()
        self.taken.clear()

    async def _watch_files(self) -> None:
        from watchfiles import awatch

        root = str(self.vault)
        relevant = relevant_in(root)
        # Cancelling the task stops the Rust watcher too (awatch sets its stop event).
        async for changes in awatch(self.vault, watch_filter=relevant, debounce=DEBOUNCE_MS, step=STEP_MS):
            # Counted as pending: the notes (and settings) changed, and the notes in a folder made or moved in,
            # whose own events may have come before the watcher was watching the folder.
            seen = await asyncio.to_thread(_notes_changed, root, [path for _, path in changes])
            self.pending |= seen
            self._changed.set()

    async def _sync_rounds(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            self.taken, self.pending = self.pending, set()
            try:
                async for event in self.ingestor.sync(self.vault, replace_vault=self.replace_vault):
                    if not isinstance(event, FileDone):
                        continue
                    changed = event.path in self.taken
                    self.taken.discard(event.path)  # indexed (or failed): no longer pending
                    # Every sync reports again each file it cannot index (a note too large, a symlink out of the
                    # vault): only one that changed now is news.
                    if event.outcome is Outcome.FAILED and not changed:
                        continue
                    if event.outcome is not Outcome.UNCHANGED:
                        self._report(event)
            except SyncBusy:
                # Another sync (a caller's, another replica's) is running: it may not have seen these changes.
                self.pending |= self.taken
                await asyncio.sleep(BUSY_RETRY_SECONDS)
                self._changed.set()
            except SecondbrainError as error:
                extra = {"vault": str(self.vault), "error": str(error)}
                log.warning("a watched change could not be synced", extra=extra)
            except Exception:
                log.exception("a watched change could not be synced", extra={"vault": str(self.vault)})
            finally:
                self.taken = set()

    def _report(self, event: FileDone) -> None:
        # At INFO, a failure too: the followers say each change to a person (`up` at a terminal, where the servers
        # log their warnings only); the log line is for a log collector.
        if event.outcome is not Outcome.FAILED:
            self.last_change = datetime.now(UTC)
        extra = {"path": event.path, "outcome": event.outcome.value, **({"error": event.error} if event.error else {})}
        log.info(f"watched change: {event.outcome.value} {event.path}", extra=extra)
        for follower in self.followers:
            with contextlib.suppress(asyncio.QueueFull):
                follower.put_nowait(event)


class Watchers:
    """The service's watchers, one per vault followed; each runs while it has a follower."""

    def __init__(self, ingestor: Ingestor) -> None:
        self.ingestor = ingestor
        self.by_vault: dict[Path, VaultWatcher] = {}
        self._lock = asyncio.Lock()

    def of(self, vault: Path | None) -> VaultWatcher | None:
        """The running watcher of `vault` (resolved; any, when None), if one runs."""
        if vault is None:
            return next(iter(self.by_vault.values()), None)
        return self.by_vault.get(vault)

    @contextlib.asynccontextmanager
    async def follow(self, vault: Path, replace_vault: bool) -> AsyncIterator[Callable[[], AsyncIterator[FileDone]]]:
        """Watch `vault` (resolved) while the block runs, starting its watcher before the block, so a change the
        block's own sync misses is not lost; the block gets the watcher's changes as an async iterator."""
        queue: asyncio.Queue[FileDone] = asyncio.Queue(FOLLOWER_BACKLOG)
        async with self._lock:
            watcher = self.by_vault.get(vault)
            if watcher is None:
                watcher = VaultWatcher(self.ingestor, vault, replace_vault)
                await watcher.start()
                self.by_vault[vault] = watcher
            watcher.followers.add(queue)

        async def changes() -> AsyncIterator[FileDone]:
            while True:
                yield await queue.get()

        try:
            yield changes
        finally:
            async with self._lock:
                watcher.followers.discard(queue)
                if not watcher.followers:
                    self.by_vault.pop(vault, None)
                    await watcher.stop()

    async def stop(self) -> None:
        for watcher in list(self.by_vault.values()):
            await watcher.stop()
        self.by_vault.clear()
