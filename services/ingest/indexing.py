"""Indexing changed notes: parse and chunk, add context lines and vectors, store each note in one transaction.

A changed note is prepared (parsed, chunked), gets its context lines when enrichment is on, keeps the vector of every
chunk that did not change, and joins a group; a group's new chunks are embedded together, across notes (an encoder
batches and sorts them by length), while the group before is written and the next one prepared.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import asyncpg
import numpy as np

from secondbrain.db import Database
from secondbrain.db.database import lost_database
from secondbrain.embedding.base import Embedder
from secondbrain.errors import FailedPrecondition, InvalidInput, NotFound, SecondbrainError
from secondbrain.file_kinds import is_attachment
from secondbrain.ingest import store
from secondbrain.ingest.attachment_text import (
    SHOWN_IN,
    SHOWN_IN_NOTES,
    AttachmentText,
    attachment_text,
    content_hash,
    read_attachment_bytes,
    shown_in_context,
)
from secondbrain.ingest.chunker import Chunk, ChunkBudget, TooManyChunks, chunk_note
from secondbrain.ingest.enrich import Contextualizer
from secondbrain.ingest.events import FileDone, Outcome, Totals
from secondbrain.ingest.formats.base import Rendering, Unreadable
from secondbrain.ingest.note import ParsedNote, parse_note
from secondbrain.ingest.note_dates import DateSpan, note_date, passage_date
from secondbrain.ingest.vault_walk import VaultFile, read_note_text
from secondbrain.vault_config import IngestSection
from secondbrain.vault_files import HardLinked, OutsideVault

log = logging.getLogger(__name__)

# Room left in the encoder's window for the context line when enrichment is on.
CONTEXT_TOKENS = 48
# New chunks (or notes) gathered before they are embedded together: big enough for full batches that an encoder
# can sort by length, small enough that progress events keep coming.
GROUP_CHUNKS = 256
GROUP_NOTES = 64

# Records a file's outcome on its queue row, on the connection (and in the transaction) it is given.
Recorder = Callable[[asyncpg.Connection, FileDone], Awaitable[None]]


def unchanged_on_disk(known: store.IndexedFile | None, file: VaultFile, force: bool) -> bool:
    """Whether the index holds `file` as it is: indexed, with the same size and modification time, so unchanged
    without reading it (what rsync and git assume too). A forced sync reads every file."""
    if force or known is None or known.mtime is None or known.status != "indexed":
        return False
    return known.size == file.size and abs(known.mtime.timestamp() - file.mtime) < 1e-6


def unchanged_content(known: store.IndexedFile | None, content_hash: str, force: bool = False) -> bool:
    """Whether the index holds this very content, embedded: a file touched but not changed. A forced sync
    re-indexes it all the same."""
    return not force and known is not None and known.status == "indexed" and known.content_hash == content_hash


@dataclass
class PreparedNote:
    """A changed note, parsed and chunked, waiting for its vectors."""

    note: ParsedNote
    chunks: list[Chunk]
    mtime: datetime
    size: int
    is_new: bool
    contexts: list[str]
    vectors: list[np.ndarray | None]
    warnings: list[str] = field(default_factory=list)
    # Why the note is not to be indexed though it was read (it makes more chunks than allowed); "" when it is.
    refused: str = ""
    embed_error: str = ""
    embedded: int = 0
    date: DateSpan | None = None
    # An attachment's rendering, which says the page of each line; None for a note.
    rendering: Rendering | None = None

    def embed_text(self, position: int) -> str:
        context = self.contexts[position]
        content = self.chunks[position].content
        return f"{context}\n\n{content}" if context else content

    def row(self) -> store.NoteRow:
        note = self.note
        embedded = self.embed_error == ""
        return store.NoteRow(
            path=note.path,
            title=note.title,
            body=note.body,
            body_start_line=note.body_start_line,
            frontmatter=note.frontmatter,
            aliases=note.aliases,
            tags=note.tags,
            content_hash=note.content_hash,
            mtime=self.mtime,
            size=self.size,
            status="indexed" if embedded else "pending",
            # What the sync said of the note is kept with it, so `status --files` (and the index page) says it later:
            # a malformed front matter read as none, say. (status_reason has held only a failure's reason so far.)
            status_reason="; ".join(([] if embedded else [f"not embedded yet: {self.embed_error}"]) + self.warnings),
            links=note.links,
            date=self.date,
            chunks=[
                store.ChunkRow(
                    index=chunk.index,
                    heading_path=chunk.heading_path,
                    start_line=chunk.start_line,
                    end_line=chunk.end_line,
                    content=chunk.content,
                    context=self.contexts[position],
                    token_count=chunk.token_count,
                    embedding=self.vectors[position],
                    date=passage_date(chunk.heading_path, self.date, chunk.text) if self.date else None,
                    page_start=self._pages(chunk)[0],
                    page_end=self._pages(chunk)[1],
                )
                for position, chunk in enumerate(self.chunks)
            ],
        )

    def _pages(self, chunk: Chunk) -> tuple[int | None, int | None]:
        if self.rendering is None:
            return None, None
        return self.rendering.pages_of(chunk.start_line, chunk.end_line)


class NoteIndexer:
    """Turns notes into stored rows with one embedder (and, when enrichment is on, one contextualizer)."""

    def __init__(self, db: Database, embedder: Embedder, contextualizer: Contextualizer | None = None) -> None:
        self.db = db
        self.embedder = embedder
        self.contextualizer = contextualizer

    def budget(self, context_tokens: int = 0) -> ChunkBudget:
        """The chunker's budget: the embedder's window, less room for the context line chunks will have: an
        attachment's own (`context_tokens`, known before chunking), and enrichment's (CONTEXT_TOKENS, written after)."""
        budget = ChunkBudget.for_window(self.embedder.max_document_tokens)
        room = context_tokens + (CONTEXT_TOKENS if self.contextualizer is not None else 0)
        return replace(budget, max_tokens=budget.max_tokens - room) if room else budget

    def prepare(
        self,
        path: str,
        text: str,
        mtime: float,
        size: int,
        is_new: bool,
        limits: IngestSection,
        context_tokens: int = 0,
    ) -> PreparedNote:
        """Parse and chunk a note within the vault's `limits`. One making more chunks than
        ingest.max_chunks_per_note comes back with none and `refused` saying why, so a caller can still see it
        unchanged (a limit lowered since it was indexed refuses only its next version); a front matter over
        ingest.max_front_matter_bytes is not read, with a warning."""
        note = parse_note(path, text, limits.max_front_matter_bytes)
        refused = ""
        try:
            budget = self.budget(context_tokens)
            chunks = chunk_note(note, budget, self.embedder.count_tokens, limits.max_chunks_per_note)
        except TooManyChunks as error:
            chunks, refused = [], str(error)
        warnings = list(note.warnings)
        if not chunks:
            warnings.append("the note has no text to index")
        modified = store.to_datetime(mtime)
        return PreparedNote(
            note=note,
            chunks=chunks,
            date=note_date(path, note.frontmatter, modified, warnings, note.body),
            mtime=modified,
            size=size,
            is_new=is_new,
            contexts=[""] * len(chunks),
            vectors=[None] * len(chunks),
            warnings=warnings,
            refused=refused,
        )

    def prepare_attachment(
        self,
        path: str,
        text: AttachmentText,
        mtime: float,
        size: int,
        is_new: bool,
        limits: IngestSection,
        shown: str = "",
    ) -> PreparedNote:
        """An attachment prepared as the note its rendering is, known by the hash of its bytes (so a file touched
        but unchanged is never parsed again), each chunk with its pages and with `shown` (the notes it is shown in)
        as its context, and what could not be read as warnings."""
        # The context is embedded before each chunk's text, with a blank line between: room is kept for both.
        room = self.embedder.count_tokens(f"{shown}\n\n") if shown else 0
        prepared = self.prepare(path, text.rendering.text, mtime, size, is_new, limits, context_tokens=room)
        prepared.contexts = [shown] * len(prepared.chunks)
        prepared.note = replace(prepared.note, content_hash=text.content_hash)
        prepared.rendering = text.rendering
        prepared.warnings[:0] = text.unread
        if prepared.warnings and prepared.warnings[-1] == "the note has no text to index":
            prepared.warnings[-1] = "the file has no text to index"
        return prepared

    async def read(
        self, file: VaultFile, known: store.IndexedFile | None, force: bool, limits: IngestSection
    ) -> PreparedNote | Outcome:
        """`file` read and prepared; UNCHANGED when its content is what the index holds (its new modification time
        recorded). Raises what reading it raised (InvalidInput, NotFound, FailedPrecondition and its kinds,
        OSError, formats.base.Unreadable), for the caller to fail the file with."""
        if is_attachment(file.path):
            data = await asyncio.to_thread(read_attachment_bytes, file, limits)
            if unchanged_content(known, content_hash(data), force):
                await self._touch(file)
                return Outcome.UNCHANGED
            text = await asyncio.to_thread(attachment_text, file.path, data, limits)
            del data
            async with self.db.pool.acquire() as connection:
                shown = shown_in_context(await store.shown_in(connection, file.path, SHOWN_IN_NOTES))
            return await asyncio.to_thread(
                self.prepare_attachment, file.path, text, file.mtime, file.size, known is None, limits, shown
            )
        markdown = await asyncio.to_thread(read_note_text, file)
        prepared = await asyncio.to_thread(
            self.prepare, file.path, markdown, file.mtime, file.size, known is None, limits
        )
        if unchanged_content(known, prepared.note.content_hash, force):
            await self._touch(file)
            return Outcome.UNCHANGED
        return prepared

    async def stale_shown_in(self, paths: Sequence[str]) -> list[str]:
        """Which of the indexed attachments at `paths` carry notes they are shown in that are no longer so: a note
        embedding one was added, changed or deleted since it was read. Their passages are read again with the notes
        as they are now."""
        async with self.db.pool.acquire() as connection:
            stored = await store.first_contexts(connection, list(paths))
            shown = await store.shown_in_each(connection, list(stored), SHOWN_IN_NOTES)
        return [
            path for path, context in stored.items() if not _context_has(context, shown_in_context(shown.get(path, [])))
        ]

    async def _touch(self, file: VaultFile) -> None:
        """Touched but not changed: remember the new mtime so the next sync skips it without reading."""
        async with self.db.pool.acquire() as connection:
            await store.touch(connection, file.path, file.size, store.to_datetime(file.mtime))

    async def add_contexts_and_known_vectors(self, prepared: PreparedNote, known: store.IndexedFile | None) -> None:
        """Give the note its context lines (and say which chunks are then longer than the embedder reads), then the
        stored vector of every chunk whose content and context are unchanged (contexts first: they are half of what a
        vector is kept by)."""
        if self.contextualizer is not None and prepared.chunks:
            try:
                written = await self.contextualizer.contexts(prepared.note, prepared.chunks)
                # An attachment's own context (the notes it is shown in) goes first.
                prepared.contexts = [
                    " ".join(part for part in (own, line) if part)
                    for own, line in zip(prepared.contexts, written, strict=True)
                ]
            except SecondbrainError as error:
                prepared.warnings.append(f"embedded without context lines: {error}")
        self._warn_of_cut_chunks(prepared)
        if known is None:
            return
        async with self.db.pool.acquire() as connection:
            stored = await store.existing_vectors(connection, known.id)
        for position, chunk in enumerate(prepared.chunks):
            prepared.vectors[position] = stored.get((chunk.content, prepared.contexts[position]))

    def _warn_of_cut_chunks(self, prepared: PreparedNote) -> None:
        """Say which chunks are longer than the embedder reads, counted as they will be embedded (with their context
        lines). A code block or table over the chunk budget is embedded in windows of whole lines, so only a single
        line longer than the embedder reads can lose its tail to the search by meaning (the lexical index and the
        passages keep all of it)."""
        readable = self.embedder.max_document_tokens
        for position, chunk in enumerate(prepared.chunks):
            context = prepared.contexts[position]
            tokens = self.embedder.count_tokens(prepared.embed_text(position)) if context else chunk.token_count
            if tokens > readable:
                with_context = " with its context line" if context else ""
                prepared.warnings.append(
                    f"lines {chunk.start_line}-{chunk.end_line}: a line of code or a table row of {tokens} tokens"
                    f"{with_context} is longer than the embedder reads ({readable}); the search by meaning sees only "
                    "its head"
                )

    async def embed(self, group: Sequence[PreparedNote]) -> int:
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

    async def write(
        self, prepared: PreparedNote, also: Callable[[asyncpg.Connection], Awaitable[None]] | None = None
    ) -> None:
        """Store a prepared note; `also` runs in the same transaction, so both happen or neither."""
        async with self.db.pool.acquire() as connection, connection.transaction():
            await store.write_note(connection, prepared.row())
            if also is not None:
                await also(connection)

    async def index_files(
        self,
        files: Sequence[VaultFile],
        index: dict[str, store.IndexedFile],
        totals: Totals,
        force: bool,
        record: Recorder,
        limits: IngestSection,
    ) -> AsyncIterator[FileDone]:
        """Index `files` (what the index knows of them in `index`), yielding each as it is done; `record` stores a
        written note's outcome in the note's own transaction. A note over the vault's `limits` fails. The notes are
        written before any attachment is read: an attachment's passages carry the notes it is shown in, which are
        read from the notes' stored links."""
        notes = [file for file in files if not is_attachment(file.path)]
        attachments = [file for file in files if is_attachment(file.path)]
        for run in (notes, attachments):
            async for event in self._index_run(run, index, totals, force, record, limits):
                yield event

    async def _index_run(
        self,
        files: Sequence[VaultFile],
        index: dict[str, store.IndexedFile],
        totals: Totals,
        force: bool,
        record: Recorder,
        limits: IngestSection,
    ) -> AsyncIterator[FileDone]:
        """`index_files` of `files`, every one written by the time it ends."""
        group: list[PreparedNote] = []
        in_flight: tuple[list[PreparedNote], asyncio.Task[int]] | None = None
        try:
            for file in files:
                known = index.get(file.path)
                if unchanged_on_disk(known, file, force):
                    yield totals.report(file.path, Outcome.UNCHANGED)
                    continue
                try:
                    prepared_or_outcome = await self.read(file, known, force, limits)
                except (InvalidInput, NotFound, FailedPrecondition, OSError, Unreadable) as error:
                    # Unreadable, or gone since the walk (the next sync removes it); a link out of the vault now, or
                    # a hard link (which may be a file from outside it), so what was stored under its path goes at
                    # once.
                    reason = str(error)
                    mtime = store.to_datetime(file.mtime)
                    async with self.db.pool.acquire() as connection:
                        if isinstance(error, OutsideVault | HardLinked):
                            await store.forget_note(connection, file.path, reason, mtime)
                        else:
                            await store.mark_failed(connection, file.path, reason, file.size, mtime)
                    yield totals.report(file.path, Outcome.FAILED, error=reason)
                    continue
                if isinstance(prepared_or_outcome, Outcome):
                    yield totals.report(file.path, prepared_or_outcome)
                    continue
                prepared = prepared_or_outcome
                if prepared.refused:
                    # Skipped and reported like a note over the size limit; a version indexed before stays.
                    async with self.db.pool.acquire() as connection:
                        await store.mark_failed(connection, file.path, prepared.refused, file.size, prepared.mtime)
                    yield totals.report(file.path, Outcome.FAILED, error=prepared.refused)
                    continue
                await self.add_contexts_and_known_vectors(prepared, known)
                group.append(prepared)
                if sum(v is None for p in group for v in p.vectors) >= GROUP_CHUNKS or len(group) >= GROUP_NOTES:
                    # Embed this group in the background; meanwhile write the one before and prepare the next, so the
                    # embedder, which is the bottleneck, is never idle waiting for parsing or the database.
                    previous, in_flight = in_flight, (group, asyncio.create_task(self.embed(group)))
                    group = []
                    if previous is not None:
                        async for event in self._write_group(*previous, totals, record):
                            yield event
            if group:
                previous, in_flight = in_flight, (group, asyncio.create_task(self.embed(group)))
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
        self, group: list[PreparedNote], embedding: asyncio.Task[int], totals: Totals, record: Recorder
    ) -> AsyncIterator[FileDone]:
        totals.chunks_embedded += await embedding
        for prepared in group:
            if prepared.embed_error:
                outcome, error = Outcome.FAILED, f"stored but not embedded: {prepared.embed_error}"
            else:
                outcome, error = (Outcome.ADDED if prepared.is_new else Outcome.UPDATED), ""
            event = totals.report(
                prepared.note.path,
                outcome,
                len(prepared.chunks),
                error,
                tuple(prepared.warnings),
                prepared.embedded,
                recorded=True,
            )
            refusal = await self._store(prepared, event, record)
            if refusal is None:
                yield event
                continue
            # This note could not be stored (nothing of it was: the transaction rolled back); the rest go on.
            totals.uncount(outcome)
            reason = _not_stored(refusal)
            try:
                async with self.db.pool.acquire() as connection:
                    await store.mark_failed(connection, prepared.note.path, reason, prepared.size, prepared.mtime)
            except (asyncpg.PostgresError, TimeoutError) as error:
                if lost_database(error) is not None:
                    raise
                # The sync still reports it failed; only its status row keeps what it said before.
                log.warning("could not mark a note failed", extra={"path": prepared.note.path}, exc_info=True)
            yield totals.report(prepared.note.path, Outcome.FAILED, error=reason)

    async def _store(
        self, prepared: PreparedNote, event: FileDone, record: Recorder
    ) -> asyncpg.PostgresError | TimeoutError | None:
        """Store a note with its queue row's outcome, in one transaction (a worker killed between the two would leave
        a note stored that no sync counts as written). None when stored; else what the database refused it with,
        after one more try when another writer caused it (a deadlock, a serialization failure). A lost database
        raises: that is not this note's fault, and the sync ends saying so."""
        for attempt in (1, 2):
            try:
                await self.write(prepared, lambda connection: record(connection, event))
                return None
            except asyncpg.TransactionRollbackError as error:
                if attempt == 2:
                    return error
                log.info("storing a note collided with another writer; trying again", extra={"path": event.path})
            except (asyncpg.PostgresError, TimeoutError) as error:
                if lost_database(error) is not None:
                    raise
                return error
        raise AssertionError("unreachable: the second try returns")


def _not_stored(error: asyncpg.PostgresError | TimeoutError) -> str:
    """Why a note could not be stored, as its file's status says it."""
    if isinstance(error, (asyncpg.QueryCanceledError, TimeoutError)):
        return (
            "not stored: writing it took longer than the database allows; a note of very many chunks can, so split "
            "it or lower ingest.max_chunks_per_note"
        )
    return f"not stored: the database refused it ({type(error).__name__}: {str(error)[:200]})"


def _context_has(context: str, shown: str) -> bool:
    """Whether a chunk's stored `context` is the one `shown` makes: `shown`, then (with enrichment) a written line."""
    if not shown:
        return not context.startswith(SHOWN_IN)
    return context == shown or context.startswith(f"{shown} ")
