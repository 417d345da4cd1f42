"""The ingestion pipeline: files become notes, chunks, (context,) vectors and rows, incrementally.

A sync walks the vault, skips what is unchanged (size and mtime, then content hash), and queues the rest for every
ingest process to index (`queue`): changed notes are prepared (parse, chunk), their new chunks embedded in batches
across notes (an unchanged chunk of an edited note keeps its vector), and each note written in one transaction
(`indexing`). Notes gone from the vault are deleted. A model change clears every vector, so the sync re-embeds
everything. Nothing here knows about gRPC: the servicer maps these events to the proto.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import asyncpg

from secondbrain.db import Database
from secondbrain.db.embedding_model import ModelRecord, current_model
from secondbrain.embedding.base import Embedder
from secondbrain.errors import FailedPrecondition, InvalidInput, NotFound, ResourceExhausted, Unavailable
from secondbrain.file_kinds import is_attachment
from secondbrain.ingest import store
from secondbrain.ingest.chunker import CHUNKING
from secondbrain.ingest.enrich import Contextualizer
from secondbrain.ingest.events import FileDone, Outcome, SyncEvent, SyncFinished, SyncStarted, Totals
from secondbrain.ingest.indexing import NoteIndexer, unchanged_content, unchanged_on_disk
from secondbrain.ingest.note_paths import is_note_path, note_path, path_length_problem
from secondbrain.ingest.personas import read_personas
from secondbrain.ingest.queue import CLAIM_BATCH, WorkQueue
from secondbrain.ingest.vault_walk import VaultFile, walk_vault
from secondbrain.service.observe import INGEST_CHUNKS_EMBEDDED, INGEST_FILES
from secondbrain.vault_config import IngestSection, load_vault_config

log = logging.getLogger(__name__)


class SyncBusy(FailedPrecondition):
    """Another sync of this index holds the sync lock: this one can run once that one has finished."""


@dataclass(frozen=True)
class UpsertResult:
    outcome: Outcome
    chunks: int
    warnings: tuple[str, ...]


class Ingestor:
    """Keeps one database's index in step with one vault."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        ingest: IngestSection,
        contextualizer: Contextualizer | None = None,
        claim_batch: int = CLAIM_BATCH,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.ingest = ingest
        self.indexer = NoteIndexer(db, embedder, contextualizer)
        self.queue = WorkQueue(db, self.indexer, claim_batch)

    async def model(self) -> ModelRecord:
        """The embedder's model. Known models need nothing loaded, so a sync with nothing to embed stays fast; an
        unknown remote model is asked for its dimension once."""
        try:
            dimension = self.embedder.dimension
        except FailedPrecondition:
            await self.embedder.ensure_ready()
            dimension = self.embedder.dimension
        return ModelRecord(self.embedder.provider, self.embedder.model, dimension)

    async def _ensure_model(self, model: ModelRecord) -> str:
        """Record the embedder's model; when it differs from the index's, clear the old vectors. Returns why every
        note must be re-embedded, or '' when none must."""
        async with self.db.pool.acquire() as connection:
            stored = await current_model(connection)
            if stored == model:
                return ""
            await store.switch_model(connection, model)
        if stored is None:
            return ""
        return (
            f"the embedding model changed from {stored.identity} ({stored.dimension}-d) to {model.identity} "
            f"({model.dimension}-d): every note is re-embedded"
        )

    # Sync --------------------------------------------------------------------------------------------------------

    async def sync(self, root: Path, force: bool = False, *, replace_vault: bool = True) -> AsyncIterator[SyncEvent]:
        """Bring the index in step with the vault at `root`, yielding progress (and counting it in the metrics,
        whoever asked: the SyncVault RPC, the periodic sync, the CLI). Unless `replace_vault`, an index of another
        folder's notes is refused rather than replaced by `root`'s."""
        async for event in self._sync(root, force, replace_vault):
            if isinstance(event, FileDone):
                INGEST_FILES.labels(event.outcome.value).inc()
                INGEST_CHUNKS_EMBEDDED.inc(event.embedded)
            yield event

    async def _sync(self, root: Path, force: bool, replace_vault: bool) -> AsyncIterator[SyncEvent]:
        root = await asyncio.to_thread(lambda: root.expanduser().resolve())
        if not await asyncio.to_thread(root.is_dir):
            raise InvalidInput(f"{root} is not a directory: give the path of a vault (a folder of .md notes)")
        async with self.db.pool.acquire() as lock:
            if not await store.try_lock_sync(lock):
                raise SyncBusy("a sync of this index is already running; try again when it has finished")
            try:
                await self._close_interrupted_runs(lock)
                if not replace_vault:
                    await self._refuse_another_vault(lock, root)
                async for event in self._sync_locked(root, force):
                    yield event
            finally:
                await store.unlock_sync(lock)

    async def close_interrupted_runs(self) -> None:
        """Mark the runs of syncs whose process died as interrupted (not one another ingest process is running: its
        session holds the sync lock). An ingest process does this as it starts, so the status tells a killed sync
        from a running one before the next sync starts; it takes no lock, so a sync asked for meanwhile runs."""
        async with self.db.pool.acquire() as connection:
            await self._close_interrupted_runs(connection)

    @staticmethod
    async def _close_interrupted_runs(connection: asyncpg.Connection) -> None:
        if closed := await store.close_interrupted_runs(connection):
            log.warning("syncs left running by an ingest process that stopped are marked interrupted",
                        extra={"runs": closed})  # fmt: skip

    @staticmethod
    async def _refuse_another_vault(connection: asyncpg.Connection, root: Path) -> None:
        indexed = await store.last_synced_vault(connection)
        if indexed is not None and indexed != str(root):
            raise FailedPrecondition(
                f"this index holds the notes of {indexed}; a sync of {root} would replace them. To index that folder "
                f"here, start the ingest service with SECONDBRAIN_VAULT={root}; to keep both, give it a database of "
                "its own (DATABASE_URL)"
            )

    async def _sync_locked(self, root: Path, force: bool) -> AsyncIterator[SyncEvent]:
        started = time.perf_counter()
        # The vault's own secondbrain.json says what to ignore, read afresh so an edit applies to the next sync.
        vault_config = await asyncio.to_thread(load_vault_config, root)
        ingest = vault_config.ingest
        async with self.db.pool.acquire() as connection:
            if await store.ensure_text_search_config(connection, vault_config.search.text_search_config):
                log.info("text search configuration changed; keyword index rebuilt")
            if await store.ensure_chunking(connection, CHUNKING):
                log.info("notes are chunked differently by this version; every note is read again")
        attachment_bytes = ingest.max_attachment_file_bytes if ingest.attachments else None
        files, skipped = await asyncio.to_thread(
            walk_vault, root, ingest.ignore, ingest.max_file_bytes, attachment_bytes
        )
        personas, bad_personas = await asyncio.to_thread(read_personas, root)
        skipped = sorted([*skipped, *bad_personas], key=lambda item: item.path)
        model = await self.model()
        reembed = await self._ensure_model(model)
        async with self.db.pool.acquire() as connection:
            index = await self._respell(connection, await store.fetch_index(connection))
            run_id = await store.start_run(connection, str(root))
        totals = Totals(files_seen=len(files) + len(skipped))
        yield SyncStarted(str(root), totals.files_seen, model, reembed)
        status = "failed"
        try:
            unchanged: set[str] = set()
            async for event in self._sync_changed(run_id, root, files, index, totals, force):
                if event.outcome is Outcome.UNCHANGED:
                    unchanged.add(event.path)
                yield event
            listed = {file.path for file in files}
            for item in skipped:
                # Recorded unless that would fail the sync or overwrite a note: a path too long to be a key (one
                # stored before the limit is marked, so its old version stays, saying why) or the other spelling of
                # a listed note.
                recordable = item.path in index or not path_length_problem(item.path)
                if recordable and item.path not in listed:
                    async with self.db.pool.acquire() as connection:
                        if item.forget:  # a link now: what was stored under this path is not the vault's note
                            await store.forget_note(connection, item.path, item.reason, datetime.now(UTC))
                        else:
                            await store.mark_failed(connection, item.path, item.reason, 0, datetime.now(UTC))
                yield totals.report(item.path, Outcome.FAILED, error=item.reason)
            present = listed | {s.path for s in skipped} | {p.source for p in personas}
            gone = sorted(path for path in index if path not in present)
            for path in gone:
                async with self.db.pool.acquire() as connection:
                    removed = await store.delete_notes(connection, [path])
                yield totals.report(path, Outcome.DELETED, removed)
            if totals.added or totals.updated or totals.deleted:
                async for event in self._refresh_shown_in(run_id, root, files, unchanged, totals):
                    yield event
            async with self.db.pool.acquire() as connection:
                await store.replace_vault_personas(connection, personas)
            status = "succeeded"
            yield SyncFinished(replace(totals), (time.perf_counter() - started) * 1000)
        except (asyncio.CancelledError, GeneratorExit):
            status = "cancelled"
            raise
        finally:
            # Shielded: a cancelled sync still records how it ended.
            try:
                await asyncio.shield(self._finish_run(run_id, status, totals))
            except Exception:
                log.exception(
                    "the end of a sync could not be recorded: its run stays 'running' in ingest_runs until the next "
                    "sync (or ingest process starting) marks it interrupted, and the index status names an earlier "
                    "sync as the last",
                    extra={"run_id": run_id, "status": status},
                )

    async def _respell(
        self, connection: asyncpg.Connection, index: dict[str, store.IndexedFile]
    ) -> dict[str, store.IndexedFile]:
        """The index with every note stored under a path not in NFC (by a version before paths were normalised)
        renamed to it, so the sync finds it unchanged instead of adding it again and deleting the old row."""
        renames = {path: note_path(path) for path in index if note_path(path) != path}
        if not renames:
            return index
        await store.rename_notes(connection, renames)
        return await store.fetch_index(connection)

    async def _sync_changed(
        self,
        run_id: int,
        root: Path,
        files: Sequence[VaultFile],
        index: dict[str, store.IndexedFile],
        totals: Totals,
        force: bool,
    ) -> AsyncIterator[FileDone]:
        """Report the files that look unchanged, and queue the others for every listening ingest process."""
        # The queue holds the names on disk, which a worker opens; progress is reported under the notes' paths.
        changed: dict[str, str] = {}
        # Notes first: an attachment's passages carry the notes it is shown in, read from their stored links.
        for file in sorted(files, key=lambda file: is_attachment(file.path)):
            if unchanged_on_disk(index.get(file.path), file, force):
                yield totals.report(file.path, Outcome.UNCHANGED)
            else:
                changed[file.on_disk] = file.path
        if not changed:
            return
        async for event in self.queue.queue_and_follow(run_id, root, force, changed, totals):
            yield event

    async def _refresh_shown_in(
        self, run_id: int, root: Path, files: Sequence[VaultFile], unchanged: set[str], totals: Totals
    ) -> AsyncIterator[FileDone]:
        """Read again the attachments this sync found unchanged whose passages name notes they are no longer shown
        in as they were (a note embedding one was added, edited or deleted), so their context is the notes' now.
        Each is reported again, as updated, in place of unchanged."""
        on_disk = {file.path: file.on_disk for file in files if is_attachment(file.path) and file.path in unchanged}
        if not on_disk:
            return
        stale = await self.indexer.stale_shown_in(list(on_disk))
        if not stale:
            return
        for _ in stale:
            totals.uncount(Outcome.UNCHANGED)
        changed = {on_disk[path]: path for path in stale}
        async for event in self.queue.queue_and_follow(run_id, root, True, changed, totals):
            yield event

    async def _finish_run(self, run_id: int, status: str, totals: Totals) -> None:
        async with self.db.pool.acquire() as connection:
            await store.finish_run(connection, run_id, status, asdict(totals))

    # One note ----------------------------------------------------------------------------------------------------

    async def upsert(self, path: str, markdown: str) -> UpsertResult:
        """Index one note given as text, replacing any earlier version."""
        path = note_path(path)
        if not is_note_path(path):
            raise InvalidInput(
                f"{path!r} is not a note path: give a vault-relative path ending in .md, with '/' separators, "
                "that does not start with '/' or climb out with '..'"
            )
        if too_long := path_length_problem(path):
            raise InvalidInput(too_long)
        # Each character is one to four bytes: a text of more characters than the limit is refused without being
        # encoded (a copy of it) to measure its bytes.
        limit = self.ingest.max_file_bytes
        over = len(markdown) > limit
        size = len(markdown) if over else len(markdown.encode("utf-8", errors="surrogatepass"))
        if size > limit:
            raise ResourceExhausted(
                f"the note is {size:,} bytes{' or more' if over else ''}, over the {limit:,}-byte limit "
                "(ingest.max_file_bytes)"
            )
        if "\x00" in markdown:
            raise InvalidInput("the note contains NUL characters: it looks like a binary file, not markdown")
        text = markdown.replace("\r\n", "\n").replace("\r", "\n").removeprefix("\ufeff")
        model = await self.model()
        async with self.db.pool.acquire() as connection:
            stored = await current_model(connection)
            known = await store.fetch_file(connection, path)
        if stored is not None and stored != model:
            raise FailedPrecondition(
                f"the index was built with {stored.identity}; run a sync to re-embed it with {model.identity} "
                "before adding notes"
            )
        if stored is None:
            await self._ensure_model(model)
        prepared = await asyncio.to_thread(
            self.indexer.prepare, path, text, time.time(), size, known is None, self.ingest
        )
        if unchanged_content(known, prepared.note.content_hash):
            return UpsertResult(Outcome.UNCHANGED, 0, tuple(prepared.warnings))
        if prepared.refused:
            raise ResourceExhausted(prepared.refused)
        await self.indexer.add_contexts_and_known_vectors(prepared, known)
        await self.indexer.embed([prepared])
        if prepared.embed_error:
            raise Unavailable(f"the note was not stored: embedding failed: {prepared.embed_error}")
        await self.indexer.write(prepared)
        outcome = Outcome.ADDED if known is None else Outcome.UPDATED
        return UpsertResult(outcome, len(prepared.chunks), tuple(prepared.warnings))

    async def delete(self, path: str) -> int:
        path = note_path(path)
        async with self.db.pool.acquire() as connection:
            if await store.fetch_file(connection, path) is None:
                raise NotFound(f"no note at {path!r} in the index")
            return await store.delete_notes(connection, [path])

    async def status(self, include_files: bool = False, path_prefix: str = "") -> store.IndexStatus:
        async with self.db.pool.acquire() as connection:
            return await store.index_status(connection, include_files, note_path(path_prefix))
