"""All of the ingest service's SQL, in one place: one module per thing stored, each name re-exported here, so the
service reads `store.write_note`, `store.claim` whatever module holds it.

The invariants it keeps: a note and its chunks and links are replaced in one transaction (a crash leaves the old
version or the new, never half); every stored vector was made by the model in `embedding_model` (a model switch
clears the old vectors in the same transaction that records the new model); syncs take turns under an advisory lock;
a queued file is claimed by one worker at a time, and taken over when its claim outlives its lease.
"""

from secondbrain.ingest.store.index_settings import ensure_chunking, ensure_text_search_config, switch_model
from secondbrain.ingest.store.links import first_contexts, is_indexed, links_naming, shown_in, shown_in_each
from secondbrain.ingest.store.notes import (
    ChunkRow,
    IndexedFile,
    NoteRow,
    delete_notes,
    existing_vectors,
    fetch_file,
    fetch_files,
    fetch_index,
    forget_note,
    mark_failed,
    rename_notes,
    to_datetime,
    touch,
    write_note,
)
from secondbrain.ingest.store.personas import PersonaRow, replace_vault_personas
from secondbrain.ingest.store.queue import (
    QUEUE_CHANNEL,
    FinishedItem,
    QueueItem,
    claim,
    enqueue,
    finish_item,
    finished_since,
    queue_depth,
    renew_claims,
)
from secondbrain.ingest.store.runs import (
    SYNC_LOCK_KEY,
    close_interrupted_runs,
    finish_run,
    last_synced_vault,
    start_run,
    try_lock_sync,
    unlock_sync,
)
from secondbrain.ingest.store.status import FileStatusRow, IndexStatus, SyncRun, index_status

__all__ = [
    "QUEUE_CHANNEL",
    "SYNC_LOCK_KEY",
    "ChunkRow",
    "FileStatusRow",
    "FinishedItem",
    "IndexStatus",
    "IndexedFile",
    "NoteRow",
    "PersonaRow",
    "QueueItem",
    "SyncRun",
    "claim",
    "close_interrupted_runs",
    "delete_notes",
    "enqueue",
    "ensure_chunking",
    "ensure_text_search_config",
    "existing_vectors",
    "fetch_file",
    "fetch_files",
    "fetch_index",
    "finish_item",
    "finish_run",
    "finished_since",
    "first_contexts",
    "forget_note",
    "index_status",
    "is_indexed",
    "last_synced_vault",
    "links_naming",
    "mark_failed",
    "queue_depth",
    "rename_notes",
    "renew_claims",
    "replace_vault_personas",
    "shown_in",
    "shown_in_each",
    "start_run",
    "switch_model",
    "to_datetime",
    "touch",
    "try_lock_sync",
    "unlock_sync",
    "write_note",
]
