"""IngestService over gRPC: proto <-> domain only. Errors are mapped by secondbrain.service.error_mapping."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc

from secondbrain.config import Config
from secondbrain.db.embedding_model import ModelRecord
from secondbrain.errors import FailedPrecondition, InvalidInput
from secondbrain.ingest import store
from secondbrain.ingest.attachments import AttachmentReader
from secondbrain.ingest.events import FileDone, Outcome, SyncFinished, SyncStarted, Totals
from secondbrain.ingest.pipeline import Ingestor, SyncBusy
from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from secondbrain.ingest.watch import Watchers
from secondbrain.obsidian_app import strict_line_breaks
from secondbrain.service.convert import timestamp

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["IngestService"].full_name

OUTCOMES = {
    Outcome.ADDED: pb.FILE_OUTCOME_ADDED,
    Outcome.UPDATED: pb.FILE_OUTCOME_UPDATED,
    Outcome.UNCHANGED: pb.FILE_OUTCOME_UNCHANGED,
    Outcome.DELETED: pb.FILE_OUTCOME_DELETED,
    Outcome.FAILED: pb.FILE_OUTCOME_FAILED,
}
# How long a SyncVault that goes on watching waits for a sync under way (a watched round's) before its own.
FOLLOWER_WAITS_SECONDS = 60.0
STATES = {"indexed": pb.FILE_STATE_INDEXED, "pending": pb.FILE_STATE_PENDING, "failed": pb.FILE_STATE_FAILED}
RUN_STATES = {
    "running": pb.SYNC_RUN_STATE_RUNNING,
    "succeeded": pb.SYNC_RUN_STATE_SUCCEEDED,
    "failed": pb.SYNC_RUN_STATE_FAILED,
    "cancelled": pb.SYNC_RUN_STATE_CANCELLED,
    "interrupted": pb.SYNC_RUN_STATE_INTERRUPTED,
}


def _totals(totals: Totals) -> pb.SyncTotals:
    return pb.SyncTotals(
        files_seen=totals.files_seen,
        files_done=totals.files_done,
        added=totals.added,
        updated=totals.updated,
        unchanged=totals.unchanged,
        deleted=totals.deleted,
        failed=totals.failed,
        chunks_embedded=totals.chunks_embedded,
    )


def _model(model: ModelRecord | None) -> pb.EmbeddingModel | None:
    if model is None:
        return None
    return pb.EmbeddingModel(provider=model.provider, name=model.name, dimension=model.dimension)


def sync_event(event: SyncStarted | FileDone | SyncFinished) -> pb.SyncVaultResponse:
    """One pipeline event as the proto's stream event."""
    if isinstance(event, SyncStarted):
        return pb.SyncVaultResponse(
            started=pb.SyncStarted(
                vault_path=event.vault_path,
                files_seen=event.files_seen,
                embedding_model=_model(event.model),
                reembed_reason=event.reembed_reason,
            )
        )
    if isinstance(event, FileDone):
        return pb.SyncVaultResponse(
            file=pb.FileProgress(
                path=event.path,
                outcome=OUTCOMES[event.outcome],
                chunks=event.chunks,
                error=event.error,
                warnings=list(event.warnings),
                totals=_totals(event.totals),
            )
        )
    return pb.SyncVaultResponse(done=pb.SyncDone(totals=_totals(event.totals), milliseconds=event.milliseconds))


def _run(run: store.SyncRun | None) -> pb.SyncRun | None:
    if run is None:
        return None
    return pb.SyncRun(
        state=RUN_STATES[run.status],
        started_at=timestamp(run.started_at),
        finished_at=timestamp(run.finished_at),
        error=run.error,
    )


def status_response(status: store.IndexStatus) -> pb.GetIndexStatusResponse:
    return pb.GetIndexStatusResponse(
        notes=status.notes,
        chunks=status.chunks,
        embedded_chunks=status.embedded_chunks,
        failed_notes=status.failed_notes,
        embedding_model=_model(status.model),
        last_sync=timestamp(status.last_sync),
        vault_path=status.vault_path,
        last_run=_run(status.last_run),
        files=[
            pb.FileStatus(
                path=row.path,
                state=STATES[row.status],
                reason=row.reason,
                chunks=row.chunks,
                indexed_at=timestamp(row.indexed_at),
                date=row.date,
                date_source=row.date_source,
            )
            for row in status.files
        ],
    )


class IngestServicer(pb_grpc.IngestServiceServicer):
    def __init__(self, config: Config, ingestor: Ingestor) -> None:
        self.config = config
        self.ingestor = ingestor
        self.attachments = AttachmentReader(ingestor.db)
        self.watchers = Watchers(ingestor)

    async def SyncVault(
        self, request: pb.SyncVaultRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.SyncVaultResponse]:
        vault = self._vault_to_sync(request.vault_path)
        # A service with a vault of its own replaces whatever the index held (its operator chose that folder); one
        # without syncs a caller's folder only into an empty index or the same folder's, so a caller cannot swap
        # the index for another folder of this machine.
        replace_vault = self.config.settings.vault is not None
        root = await asyncio.to_thread(lambda: vault.expanduser().resolve())
        if not request.watch or not await asyncio.to_thread(root.is_dir):  # (the sync says what is wrong)
            async for event in self.ingestor.sync(vault, force=request.force, replace_vault=replace_vault):
                yield sync_event(event)
            return
        async with self.watchers.follow(root, replace_vault) as changes:
            # The vault may already be watched (another follower), and its watcher syncing: this sync waits its turn.
            deadline = time.monotonic() + FOLLOWER_WAITS_SECONDS
            while True:
                try:
                    async for event in self.ingestor.sync(root, force=request.force, replace_vault=replace_vault):
                        yield sync_event(event)
                    break
                except SyncBusy:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.2)
            async for change in changes():
                yield sync_event(change)

    def _vault_to_sync(self, requested: str) -> Path:
        """The configured vault, or the requested folder when the service has none. A service with a vault syncs
        only that one: syncing another folder would replace the index with it (and expose whatever .md files that
        folder of the server holds)."""
        configured = self.config.settings.vault
        if not requested:
            if configured is None:
                raise InvalidInput("no vault to sync: pass vault_path, or start the service with SECONDBRAIN_VAULT set")
            return configured
        if configured is not None and Path(requested).resolve() != configured.resolve():
            raise InvalidInput(
                f"this ingest service indexes the vault {configured.resolve()}; it will not sync {requested}. Leave "
                "vault_path empty, or run another service (with its own database) for another vault"
            )
        return configured or Path(requested)

    async def UpsertNote(
        self, request: pb.UpsertNoteRequest, context: grpc.aio.ServicerContext
    ) -> pb.UpsertNoteResponse:
        result = await self.ingestor.upsert(request.path, request.markdown)
        return pb.UpsertNoteResponse(outcome=OUTCOMES[result.outcome], chunks=result.chunks, warnings=result.warnings)

    async def DeleteNote(
        self, request: pb.DeleteNoteRequest, context: grpc.aio.ServicerContext
    ) -> pb.DeleteNoteResponse:
        return pb.DeleteNoteResponse(chunks_removed=await self.ingestor.delete(request.path))

    async def GetIndexStatus(
        self, request: pb.GetIndexStatusRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetIndexStatusResponse:
        status = await self.ingestor.status(request.include_files, request.path_prefix)
        response = status_response(status)
        vault = self.config.settings.vault or (Path(status.vault_path) if status.vault_path else None)
        if vault is not None:
            response.strict_line_breaks = await asyncio.to_thread(strict_line_breaks, vault)
        watcher = self.watchers.of(await asyncio.to_thread(lambda: vault.resolve()) if vault else None)
        last_change = status.last_change
        if watcher is not None:
            response.watching = True
            response.pending_changes = watcher.pending_changes
            last_change = max(filter(None, (last_change, watcher.last_change)), default=None)
        if last_change is not None:
            response.last_change.CopyFrom(timestamp(last_change))
        return response

    async def GetAttachment(
        self, request: pb.GetAttachmentRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetAttachmentResponse:
        vault = await self._indexed_vault()
        found = await self.attachments.read(vault, request.target, request.from_path)
        return pb.GetAttachmentResponse(path=found.path, media_type=found.media_type, content=found.content)

    async def _indexed_vault(self) -> Path:
        """The vault the index is of: the service's own, else the folder last synced into it."""
        if self.config.settings.vault is not None:
            return self.config.settings.vault
        async with self.ingestor.db.pool.acquire() as connection:
            synced = await store.last_synced_vault(connection)
        if synced is None:
            raise FailedPrecondition("the index holds no vault yet: sync one first (secondbrain ingest VAULT)")
        return Path(synced)
