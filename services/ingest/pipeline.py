"""The ingestion pipeline: files become notes, chunks, (context,) vectors and rows, incrementally.

A sync walks the vault, skips what is unchanged (size and mtime, then content hash), prepares changed notes (parse,
chunk), embeds their new chunks in batches across notes (an unchanged chunk of an edited note keeps its vector), and
writes each note in one transaction. Notes gone from the vault are deleted. A model change clears every vector, so
the sync re-embeds everything. Nothing here knows about gRPC: the servicer maps these events to the proto.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

import asyncpg
import numpy as np

from secondbrain.config import EmbeddingSection, IngestSection, load_vault_config
from secondbrain.db import Database
from secondbrain.db.embedding_model import ModelRecord, current_model
from secondbrain.embedding.base import Embedder
from secondbrain.errors import (
    FailedPrecondition,
    InvalidInput,
    NotFound,
    ResourceExhausted,
    SecondbrainError,
    Unavailable,
)
from secondbrain.ingest import store
from secondbrain.ingest.chunker import Chunk, ChunkBudget, chunk_note
from secondbrain.ingest.enrich import Contextualizer
from secondbrain.ingest.note import ParsedNote, parse_note
from secondbrain.ingest.personas import read_personas
from secondbrain.ingest.vault_walk import (
    VaultFile,
    is_note_path,
    note_path,
    path_length_problem,
    read_note_text,
    walk_vault,
)
from secondbrain.service.observe import INGEST_CHUNKS_EMBEDDED, INGEST_FILES

log = logging.getLogger(__name__)

# Room left in the encoder's window for the context line when enrichment is on.
CONTEXT_TOKENS = 48
# New chunks (or notes) gathered before they are embedded together: big enough for full batches that an encoder
# can sort by length, small enough that progress events keep coming.
GROUP_CHUNKS = 256
GROUP_NOTES = 64
# Files a worker claims from the queue at once: several groups, so embedding one overlaps preparing the next.
CLAIM_BATCH = 4 * GROUP_NOTES
# A claim older than this is taken to belong to a worker that died, and is claimed again.
LEASE_SECONDS = 600.0
# How often a sync looks for files other workers finished.
FOLLOW_SECONDS = 0.1


class Outcome(StrEnum):
    ADDED = "added"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    DELETED = "deleted"
    FAILED = "failed"


@dataclass
class Totals:
    files_seen: int = 0
    files_done: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0
    chunks_embedded: int = 0

    def count(self, outcome: Outcome) -> None:
        self.files_done += 1
        setattr(self, outcome.value, getattr(self, outcome.value) + 1)


@dataclass(frozen=True)
class SyncStarted:
    vault_path: str
    files_seen: int
    model: ModelRecord
    reembed_reason: str


@dataclass(frozen=True)
class FileDone:
    path: str
    outcome: Outcome
    chunks: int
    totals: Totals
    error: str = ""
    warnings: tuple[str, ...] = ()
    embedded: int = 0
    # Already recorded on its queue row, in the transaction that stored the note.
    recorded: bool = False


# Records a file's outcome on its queue row, on the connection (and in the transaction) it is given.
Recorder = Callable[[asyncpg.Connection, FileDone], Awaitable[None]]


@dataclass(frozen=True)
class SyncFinished:
    totals: Totals
    milliseconds: float


SyncEvent = SyncStarted | FileDone | SyncFinished


@dataclass(frozen=True)
class UpsertResult:
    outcome: Outcome
    chunks: int
    warnings: tuple[str, ...]


@dataclass
class _Prepared:
    """A changed note, parsed and chunked, waiting for its vectors."""

    note: ParsedNote
    chunks: list[Chunk]
    mtime: datetime
    size: int
    is_new: bool
    contexts: list[str]
    vectors: list[np.ndarray | None]
    warnings: list[str] = field(default_factory=list)
    embed_error: str = ""
    embedded: int = 0

    def embed_text(self, position: int) -> str:
        context = self.contexts[position]
        content = self.chunks[position].content
        return f"{context}\n\n{content}" if context else content


class Ingestor:
    """Keeps one database's index in step with one vault."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        ingest: IngestSection,
        embedding: EmbeddingSection,
        contextualizer: Contextualizer | None = None,
        claim_batch: int = CLAIM_BATCH,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.ingest = ingest
        self.embedding = embedding
        self.contextualizer = contextualizer
        self.claim_batch = claim_batch
        # Names this process's claims in the queue: the pod (host) and the process.
        self.worker_name = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"

    def budget(self) -> ChunkBudget:
        budget = ChunkBudget.for_window(self.embedder.max_document_tokens)
        if self.contextualizer is None:
            return budget
        return replace(budget, max_tokens=budget.max_tokens - CONTEXT_TOKENS)

    async def model(self) -> ModelRecord:
        """The embedder's model. Known models need nothing loaded, so a sync with nothing to embed stays fast; an
        unknown remote model is asked for its dimension once."""
        try:
            dimension = self.embedder.dimension
        except FailedPrecondition:
            await self.embedder.ensure_ready()
            dimension = self.embedder.dimension
        return ModelRecord(self.embedder.provider, self.embedder.model, dimension)

    # Preparing ---------------------------------------------------------------------------------------------------

    def _prepare(self, path: str, text: str, mtime: float, size: int, is_new: bool) -> _Prepared:
        note = parse_note(path, text)
        chunks = chunk_note(note, self.budget(), self.embedder.count_tokens)
        warnings = list(note.warnings)
        for chunk in chunks:
            if chunk.oversized:
                warnings.append(
                    f"lines {chunk.start_line}-{chunk.end_line}: a code block or table of {chunk.token_count} tokens "
                    f"is longer than the embedder reads ({self.embedder.window}); its end is not embedded"
                )
        if not chunks:
            warnings.append("the note has no text to index")
        return _Prepared(
            note=note,
            chunks=chunks,
            mtime=datetime.fromtimestamp(mtime, UTC),
            size=size,
            is_new=is_new,
            contexts=[""] * len(chunks),
            vectors=[None] * len(chunks),
            warnings=warnings,
        )

    async def _reuse_vectors(self, prepared: _Prepared, file_id: int | None) -> None:
        if file_id is None:
            return
        async with self.db.pool.acquire() as connection:
            known = await store.existing_vectors(connection, file_id)
        for position, chunk in enumerate(prepared.chunks):
            prepared.vectors[position] = known.get((chunk.content, prepared.contexts[position]))

    async def _contextualize(self, prepared: _Prepared) -> None:
        if self.contextualizer is None or not prepared.chunks:
            return
        try:
            prepared.contexts = await self.contextualizer.contexts(prepared.note, prepared.chunks)
        except SecondbrainError as error:
            prepared.warnings.append(f"embedded without context lines: {error}")

    async def _embed(self, group: Sequence[_Prepared]) -> int:
        """Embed every chunk of `group` that has no vector yet, in one call; returns how many were embedded."""
        wanted = [(p, i) for p in group for i, vector in enumerate(p.vectors) if vector is None]
        if not wanted:
            return 0
        try:
            vectors = await self.embedder.embed_documents([p.embed_text(i) for p, i in wanted])
        except SecondbrainError as error:
            for prepared in {id(p): p for p, _ in wanted}.values():
                prepared.embed_error = str(error)
            return 0
        for (prepared, position), vector in zip(wanted, vectors, strict=True):
            prepared.vectors[position] = vector
            prepared.embedded += 1
        return len(wanted)

    def _row(self, prepared: _Prepared) -> store.NoteRow:
        note = prepared.note
        embedded = prepared.embed_error == ""
        return store.NoteRow(
            path=note.path,
            title=note.title,
            body=note.body,
            frontmatter=note.frontmatter,
            aliases=note.aliases,
            tags=note.tags,
            content_hash=note.content_hash,
            mtime=prepared.mtime,
            size=prepared.size,
            status="indexed" if embedded else "pending",
            status_reason="" if embedded else f"not embedded yet: {prepared.embed_error}",
            links=note.links,
            chunks=[
                store.ChunkRow(
                    index=chunk.index,
                    heading_path=chunk.heading_path,
                    start_line=chunk.start_line,
                    end_line=chunk.end_line,
                    content=chunk.content,
                    context=prepared.contexts[position],
                    token_count=chunk.token_count,
                    embedding=prepared.vectors[position],
                )
                for position, chunk in enumerate(prepared.chunks)
            ],
        )

    async def _write(
        self, prepared: _Prepared, also: Callable[[asyncpg.Connection], Awaitable[None]] | None = None
    ) -> None:
        """Store a prepared note; `also` runs in the same transaction, so both happen or neither."""
        async with self.db.pool.acquire() as connection, connection.transaction():
            await store.write_note(connection, self._row(prepared))
            if also is not None:
                await also(connection)

    # Model -------------------------------------------------------------------------------------------------------

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

    async def sync(self, root: Path, force: bool = False) -> AsyncIterator[SyncEvent]:
        """Bring the index in step with the vault at `root`, yielding progress (and counting it in the metrics,
        whoever asked: the SyncVault RPC, the periodic sync, the CLI)."""
        async for event in self._sync(root, force):
            if isinstance(event, FileDone):
                INGEST_FILES.labels(event.outcome.value).inc()
                INGEST_CHUNKS_EMBEDDED.inc(event.embedded)
            yield event

    async def _sync(self, root: Path, force: bool) -> AsyncIterator[SyncEvent]:
        root = await asyncio.to_thread(lambda: root.expanduser().resolve())
        if not await asyncio.to_thread(root.is_dir):
            raise InvalidInput(f"{root} is not a directory: give the path of a vault (a folder of .md notes)")
        async with self.db.pool.acquire() as lock:
            if not await store.try_lock_sync(lock):
                raise FailedPrecondition("a sync of this index is already running; try again when it has finished")
            try:
                async for event in self._sync_locked(root, force):
                    yield event
            finally:
                await store.unlock_sync(lock)

    async def _sync_locked(self, root: Path, force: bool) -> AsyncIterator[SyncEvent]:
        started = time.perf_counter()
        # The vault's own secondbrain.json says what to ignore, read afresh so an edit applies to the next sync.
        vault_config = await asyncio.to_thread(load_vault_config, root)
        ingest = vault_config.ingest
        async with self.db.pool.acquire() as connection:
            if await store.ensure_text_search_config(connection, vault_config.search.text_search_config):
                log.info("text search configuration changed; keyword index rebuilt")
        files, skipped = await asyncio.to_thread(walk_vault, root, ingest.ignore, ingest.max_file_bytes)
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
            async for event in self._sync_through_queue(run_id, root, files, index, totals, force):
                yield event
            listed = {file.path for file in files}
            for item in skipped:
                # Recorded unless that would fail the sync or overwrite a note: a path too long to be a key (one
                # stored before the limit is marked, so its old version stays, saying why) or the other spelling of
                # a listed note.
                recordable = item.path in index or not path_length_problem(item.path)
                if recordable and item.path not in listed:
                    async with self.db.pool.acquire() as connection:
                        await store.mark_failed(connection, item.path, item.reason, 0, datetime.now(UTC))
                totals.count(Outcome.FAILED)
                yield FileDone(item.path, Outcome.FAILED, 0, replace(totals), error=item.reason)
            present = listed | {s.path for s in skipped} | {p.source for p in personas}
            gone = sorted(path for path in index if path not in present)
            for path in gone:
                async with self.db.pool.acquire() as connection:
                    removed = await store.delete_notes(connection, [path])
                totals.count(Outcome.DELETED)
                yield FileDone(path, Outcome.DELETED, removed, replace(totals))
            async with self.db.pool.acquire() as connection:
                await store.replace_vault_personas(connection, personas)
            status = "succeeded"
            yield SyncFinished(replace(totals), (time.perf_counter() - started) * 1000)
        except (asyncio.CancelledError, GeneratorExit):
            status = "cancelled"
            raise
        finally:
            # Shielded: a cancelled sync still records how it ended.
            with contextlib.suppress(Exception):
                await asyncio.shield(self._finish_run(run_id, status, totals))

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

    async def _sync_through_queue(
        self,
        run_id: int,
        root: Path,
        files: Sequence[VaultFile],
        index: dict[str, store.IndexedFile],
        totals: Totals,
        force: bool,
    ) -> AsyncIterator[FileDone]:
        """Queue every file that may have changed, work on the queue with whichever other ingest processes are
        listening, and report each file as it is finished, whoever finished it."""
        # The queue holds the names on disk, which a worker opens; progress is reported under the notes' paths.
        changed: dict[str, str] = {}
        for file in files:
            known = index.get(file.path)
            if not force and known is not None and known.looks_unchanged(file.size, file.mtime):
                totals.count(Outcome.UNCHANGED)
                yield FileDone(file.path, Outcome.UNCHANGED, 0, replace(totals))
            else:
                changed[file.on_disk] = file.path
        if not changed:
            return
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
                finished = [item for item in finished if item.path not in reported]
                for item in finished:
                    reported.add(item.path)
                    after, remaining = max(after, item.done_seq), remaining - 1
                    outcome = Outcome(item.outcome)
                    totals.count(outcome)
                    totals.chunks_embedded += item.embedded
                    yield FileDone(
                        changed[item.path],
                        outcome,
                        item.chunks,
                        replace(totals),
                        item.error,
                        item.warnings,
                        item.embedded,
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
            for force in (False, True):
                batch = [item for item in items if item.force is force]
                if batch:
                    finished += await self._process_claimed(batch, force)

    async def _process_claimed(self, items: list[store.QueueItem], force: bool) -> int:
        # A queued path is the name on disk (see _sync_through_queue); the note it holds goes by its NFC spelling.
        by_path = {note_path(item.path): item for item in items}
        files, finished = [], 0
        for item in items:
            absolute = Path(item.vault_path) / item.path
            try:
                stat = await asyncio.to_thread(absolute.stat)
            except OSError as error:
                reason = f"{item.path} can no longer be read ({error.strerror or error}); the next sync catches up"
                async with self.db.pool.acquire() as connection:
                    await store.finish_item(connection, item.id, self.worker_name, "failed", 0, 0, reason, [])
                finished += 1
                continue
            files.append(VaultFile(note_path(item.path), absolute, stat.st_size, stat.st_mtime, on_disk=item.path))
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

        async for event in self._sync_files(files, index, Totals(), force, record):
            if not event.recorded:
                async with self.db.pool.acquire() as connection:
                    await record(connection, event)
            finished += 1
        return finished

    async def _finish_run(self, run_id: int, status: str, totals: Totals) -> None:
        async with self.db.pool.acquire() as connection:
            await store.finish_run(connection, run_id, status, asdict(totals))

    async def _sync_files(
        self,
        files: Sequence[VaultFile],
        index: dict[str, store.IndexedFile],
        totals: Totals,
        force: bool,
        record: Recorder,
    ) -> AsyncIterator[FileDone]:
        group: list[_Prepared] = []
        in_flight: tuple[list[_Prepared], asyncio.Task[int]] | None = None
        try:
            for file in files:
                known = index.get(file.path)
                if not force and known is not None and known.looks_unchanged(file.size, file.mtime):
                    totals.count(Outcome.UNCHANGED)
                    yield FileDone(file.path, Outcome.UNCHANGED, 0, replace(totals))
                    continue
                try:
                    text = await asyncio.to_thread(read_note_text, file)
                except (InvalidInput, NotFound, FailedPrecondition, OSError) as error:
                    # Unreadable, or gone since the walk (the next sync removes it).
                    reason = str(error)
                    async with self.db.pool.acquire() as connection:
                        await store.mark_failed(connection, file.path, reason, file.size, store.to_datetime(file.mtime))
                    totals.count(Outcome.FAILED)
                    yield FileDone(file.path, Outcome.FAILED, 0, replace(totals), error=reason)
                    continue
                prepared = await asyncio.to_thread(self._prepare, file.path, text, file.mtime, file.size, known is None)
                if (
                    not force
                    and known is not None
                    and known.status == "indexed"
                    and known.content_hash == prepared.note.content_hash
                ):
                    # Touched but not changed: remember the new mtime so the next sync skips it without reading.
                    async with self.db.pool.acquire() as connection:
                        await store.touch(connection, file.path, file.size, prepared.mtime)
                    totals.count(Outcome.UNCHANGED)
                    yield FileDone(file.path, Outcome.UNCHANGED, 0, replace(totals))
                    continue
                await self._contextualize(prepared)
                await self._reuse_vectors(prepared, known.id if known else None)
                group.append(prepared)
                if sum(v is None for p in group for v in p.vectors) >= GROUP_CHUNKS or len(group) >= GROUP_NOTES:
                    # Embed this group in the background; meanwhile write the one before and prepare the next, so the
                    # embedder, which is the bottleneck, is never idle waiting for parsing or the database.
                    previous, in_flight = in_flight, (group, asyncio.create_task(self._embed(group)))
                    group = []
                    if previous is not None:
                        async for event in self._write_group(*previous, totals, record):
                            yield event
            if group:
                previous, in_flight = in_flight, (group, asyncio.create_task(self._embed(group)))
                if previous is not None:
                    async for event in self._write_group(*previous, totals, record):
                        yield event
            if in_flight is not None:
                pending, in_flight = in_flight, None
                async for event in self._write_group(*pending, totals, record):
                    yield event
        finally:
            if in_flight is not None:
                in_flight[1].cancel()

    async def _write_group(
        self, group: list[_Prepared], embedding: asyncio.Task[int], totals: Totals, record: Recorder
    ) -> AsyncIterator[FileDone]:
        totals.chunks_embedded += await embedding
        for prepared in group:
            if prepared.embed_error:
                outcome, error = Outcome.FAILED, f"stored but not embedded: {prepared.embed_error}"
            else:
                outcome, error = (Outcome.ADDED if prepared.is_new else Outcome.UPDATED), ""
            totals.count(outcome)
            event = FileDone(
                prepared.note.path,
                outcome,
                len(prepared.chunks),
                replace(totals),
                error,
                tuple(prepared.warnings),
                prepared.embedded,
                recorded=True,
            )
            # The note and its queue row's outcome in one transaction: a worker killed between the two would leave
            # a note stored that no sync counts as written.
            await self._write(prepared, lambda connection, event=event: record(connection, event))
            yield event

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
        size = len(markdown.encode("utf-8", errors="surrogatepass"))
        if size > self.ingest.max_file_bytes:
            raise ResourceExhausted(
                f"the note is {size} bytes, over the {self.ingest.max_file_bytes}-byte limit (ingest.max_file_bytes)"
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
        prepared = await asyncio.to_thread(self._prepare, path, text, time.time(), size, known is None)
        if known is not None and known.status == "indexed" and known.content_hash == prepared.note.content_hash:
            return UpsertResult(Outcome.UNCHANGED, 0, tuple(prepared.warnings))
        await self._contextualize(prepared)
        await self._reuse_vectors(prepared, known.id if known else None)
        await self._embed([prepared])
        if prepared.embed_error:
            raise Unavailable(f"the note was not stored: embedding failed: {prepared.embed_error}")
        await self._write(prepared)
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
