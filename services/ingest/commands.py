"""`secondbrain ingest` and `secondbrain status`: the ingest service's API from a terminal.

Both talk to a running ingest service over gRPC when one answers at the configured address; otherwise to an ingest
server they start in this process (`secondbrain.service.access`), so `secondbrain ingest ~/notes` works with nothing
started. Either way the events are the proto's, so there is one renderer.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from secondbrain.cli.terminal import hanging, stderr_console, stdout_console
from secondbrain.config import Config
from secondbrain.file_kinds import PLURALS, kind_of
from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from secondbrain.service.access import connect, in_process, streaming
from secondbrain.wording import counted

# Warnings a sync prints before it only counts the rest (a vault of long tables has one per table): a failed note is
# always printed, and --json lists every warning.
WARNINGS_SHOWN = 10

STATE_NAMES = {value: pb.FileState.Name(value).removeprefix("FILE_STATE_").lower() for value in pb.FileState.values()}


def ingest_service(
    config: Config, address: str | None, console: Console
) -> contextlib.AbstractAsyncContextManager[pb_grpc.IngestServiceStub]:
    return connect(config, "ingest", address, pb_grpc.IngestServiceStub, console)


class SyncView:
    """A progress bar for a terminal (files, chunks, embeddings per second, errors), or JSON lines with --json."""

    def __init__(self, console: Console, as_json: bool) -> None:
        self.console = console
        self.as_json = as_json
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=console,
            disable=as_json,
        )
        self.task = self.progress.add_task("files", total=None, detail="")
        self.started = time.monotonic()
        self.summary: pb.SyncDone | None = None
        self.warnings = 0

    def __enter__(self) -> SyncView:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def show(self, event: pb.SyncVaultResponse) -> None:
        if self.as_json:
            print(json.dumps(MessageToDict(event, preserving_proto_field_name=True)), flush=True)
        kind = event.WhichOneof("event")
        if kind == "started":
            started = event.started
            self.progress.update(self.task, total=started.files_seen)
            if started.reembed_reason and not self.as_json:
                self.console.print(f"[yellow]{started.reembed_reason}[/yellow]")
        elif kind == "file":
            self._file(event.file)
        elif kind == "done":
            self.summary = event.done

    def _file(self, file: pb.FileProgress) -> None:
        totals = file.totals
        rate = totals.chunks_embedded / max(time.monotonic() - self.started, 1e-3)
        self.progress.update(
            self.task,
            completed=totals.files_done,
            detail=f"{counted(totals.chunks_embedded, 'chunk')} embedded ({rate:.0f}/s), {totals.failed} failed",
        )
        if self.as_json:
            return
        if file.outcome == pb.FILE_OUTCOME_FAILED:
            self.console.print(f"[red]✗ {file.path}[/red]: {file.error}")
        for warning in file.warnings:
            self.warnings += 1
            if self.warnings <= WARNINGS_SHOWN:
                self.console.print(f"[yellow]! {file.path}[/yellow]: {warning}")

    def print_summary(self) -> None:
        if self.summary is None or self.as_json:
            return
        t = self.summary.totals
        self.console.print(
            f"Synced {counted(t.files_seen, 'file')} in {self.summary.milliseconds / 1000:.1f} s: {t.added} added, "
            f"{t.updated} updated, {t.unchanged} unchanged, {t.deleted} deleted, {t.failed} failed; "
            f"{counted(t.chunks_embedded, 'chunk')} embedded."
        )
        hidden = self.warnings - WARNINGS_SHOWN
        if hidden > 0:
            self.console.print(
                f"[yellow]! {hidden} more {'warning' if hidden == 1 else 'warnings'} not shown[/yellow]: "
                "`secondbrain ingest --json` lists every one."
            )


async def run_ingest(
    config: Config, vault: Path, *, force: bool, watch: bool, address: str | None, as_json: bool
) -> int:
    console = stderr_console()
    async with ingest_service(config, address, console) as ingest:
        if not watch:
            return 1 if await _sync_once(ingest, vault, force, console, as_json) else 0
        await _watch(ingest, vault, force, console, as_json)
    return 0


async def sync_in_process(config: Config, vault: Path) -> int:
    """Sync `vault` (only what changed) into the database `config` names, through an ingest server of this
    process's own whatever service runs elsewhere (a running one has an index of its own), with the progress bar
    and summary on stderr; returns how many notes failed."""
    # The vault is this server's own, as `secondbrain ingest VAULT` makes it: the index becomes that folder's.
    config = dataclasses.replace(config, settings=config.settings.model_copy(update={"vault": vault}))
    async with in_process(config, "ingest", pb_grpc.IngestServiceStub) as ingest:
        return await _sync_once(ingest, vault, False, stderr_console(), as_json=False)


async def _sync_once(ingest: Any, vault: Path, force: bool, console: Console, as_json: bool) -> int:
    request = pb.SyncVaultRequest(vault_path=str(vault), force=force)
    with SyncView(console, as_json) as view:
        async with streaming(ingest.SyncVault(request)) as events:
            async for event in events:
                view.show(event)
    view.print_summary()
    return view.summary.totals.failed if view.summary else 0


async def _watch(ingest: Any, vault: Path, force: bool, console: Console, as_json: bool) -> None:
    """Sync, then follow the ingest service's watch of the vault (`secondbrain.ingest.watch`), a line per change,
    until Ctrl-C. Ctrl-C or SIGTERM ends it cleanly, even where the signal was ignored when this process started
    (a background job): the handler cancels this task, and the stream closes, which ends the service's watch."""
    loop = asyncio.get_running_loop()
    this = asyncio.current_task()
    assert this is not None
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, this.cancel)

    def watching() -> None:
        if not as_json:
            console.print(f"Watching {vault} for changes; Ctrl-C stops.", soft_wrap=True)

    try:
        await follow_vault(ingest, vault, force, console, as_json, synced=watching)
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


CHANGE_VERBS = {
    pb.FILE_OUTCOME_ADDED: "added",
    pb.FILE_OUTCOME_UPDATED: "updated",
    pb.FILE_OUTCOME_DELETED: "deleted",
    pb.FILE_OUTCOME_FAILED: "failed",
}


def change_line(file: pb.FileProgress) -> str:
    """The line a person reads for one change the watcher took in: "updated Journal/2026-01-20.md", or "failed
    Big.md: <why>"."""
    line = f"{CHANGE_VERBS.get(file.outcome, 'synced')} {file.path}"
    return f"{line}: {file.error}" if file.outcome == pb.FILE_OUTCOME_FAILED and file.error else line


async def follow_vault(
    ingest: Any,
    vault: Path,
    force: bool,
    console: Console,
    as_json: bool,
    synced: Callable[[], None] = lambda: None,
) -> None:
    """Sync `vault` and then watch it, through the ingest service (SyncVault with `watch`), until cancelled: the
    sync's progress bar and summary, `synced()` once it is done, then one line per change (a JSON object each
    with `as_json`). The stream has no deadline: it lasts as long as the caller follows."""
    request = pb.SyncVaultRequest(vault_path=str(vault), force=force, watch=True)
    view: SyncView | None = None
    with contextlib.ExitStack() as progress:
        view = progress.enter_context(SyncView(console, as_json))
        async with streaming(ingest.SyncVault(request)) as events:
            async for event in events:
                if view is None:
                    if as_json:
                        print(json.dumps(MessageToDict(event, preserving_proto_field_name=True)), flush=True)
                    elif event.WhichOneof("event") == "file":
                        console.print(change_line(event.file), markup=False, highlight=False, soft_wrap=True)
                    continue
                view.show(event)
                if event.WhichOneof("event") == "done":
                    progress.close()
                    view.print_summary()
                    view = None
                    synced()


def _files_by_kind(status: pb.GetIndexStatusResponse) -> str:
    """The indexed files counted by kind ("23 notes, 33 PDFs, 8 images"), notes first; "" when all are notes."""
    counts: Counter[str] = Counter(
        kind_of(file.path) for file in status.files if file.state != pb.FILE_STATE_FAILED and kind_of(file.path)
    )
    if set(counts) <= {"note"}:
        return ""
    ordered = sorted(counts.items(), key=lambda item: (item[0] != "note", -item[1], item[0]))
    return ", ".join(counted(number, kind, PLURALS.get(kind, "")) for kind, number in ordered)


async def run_status(config: Config, *, files: bool, address: str | None, as_json: bool) -> None:
    console = stdout_console()
    async with ingest_service(config, address, stderr_console()) as ingest:
        # Always ask for the files: the ones not indexed, and why, are part of the status.
        status = await ingest.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True), timeout=30)
    if as_json:
        print(json.dumps(MessageToDict(status, preserving_proto_field_name=True), indent=2))
        return
    model = status.embedding_model
    console.print(
        f"Notes: {status.notes}   chunks: {status.chunks} ({status.embedded_chunks} embedded)   "
        f"failed: {status.failed_notes}"
    )
    if by_kind := _files_by_kind(status):
        console.print(f"By type: {by_kind}", markup=False, highlight=False)
    console.print(f"Model: {model.provider}:{model.name} ({model.dimension}-d)" if model.name else "Model: none yet")
    last = status.last_sync.ToDatetime().isoformat(timespec="seconds") if status.HasField("last_sync") else "never"
    console.print(f"Last sync: {last}" + (f" of {status.vault_path}" if status.vault_path else ""))
    if (run_line := _unfinished_run_line(status)) is not None:
        console.print(run_line, markup=False, highlight=False)
    changed = status.last_change.ToDatetime().isoformat(timespec="seconds") if status.HasField("last_change") else ""
    if status.watching:
        pending = f"{counted(status.pending_changes, 'change')} not indexed yet"
        console.print(f"Watching the vault: {pending}" + (f"; last change taken in {changed}" if changed else ""))
    elif changed:
        console.print(f"Last change taken in: {changed}")
    warned = 0
    for file in status.files:
        state = STATE_NAMES[file.state]
        if not files and state == "indexed":
            warned += bool(file.reason)  # what its sync warned of (a malformed front matter read as none)
            continue
        dated = f", dated {file.date} by its {file.date_source}" if files and file.date else ""
        line = f"{file.path} ({counted(file.chunks, 'chunk')}{dated})" + (f": {file.reason}" if file.reason else "")
        console.print(hanging(console, f"{state:<8}", Text(line)))
    if warned:
        console.print(f"{counted(warned, 'note')} indexed with a warning: `secondbrain status --files` says which.")


def _unfinished_run_line(status: pb.GetIndexStatusResponse) -> str | None:
    """What became of the last sync started, when it is not the last that succeeded: running, or how it ended."""
    if not status.HasField("last_run") or status.last_run.state == pb.SYNC_RUN_STATE_SUCCEEDED:
        return None
    run = status.last_run
    started = run.started_at.ToDatetime().isoformat(timespec="seconds")
    if run.state == pb.SYNC_RUN_STATE_RUNNING:
        return f"A sync is running, since {started}."
    ended = {
        pb.SYNC_RUN_STATE_FAILED: "failed",
        pb.SYNC_RUN_STATE_CANCELLED: "was cancelled",
        pb.SYNC_RUN_STATE_INTERRUPTED: "was interrupted",
    }.get(run.state, "ended")
    return f"The sync started {started} {ended}" + (f": {run.error}" if run.error else ".")
