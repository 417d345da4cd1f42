"""Keeping the index: `ingest` (sync a vault into it) and `status` (what it holds)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from secondbrain.cli.app import config_with, run
from secondbrain.errors import InvalidInput


def ingest(
    vault: Annotated[
        Path | None, typer.Argument(help="The vault folder; default SECONDBRAIN_VAULT.", show_default=False)
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Re-embed every note, changed or not.")] = False,
    watch: Annotated[bool, typer.Option("--watch", help="Keep syncing as notes change, until Ctrl-C.")] = False,
    address: Annotated[
        str | None, typer.Option(help="host:port of an ingest service to use; default the configured one.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print each progress event as a JSON line.")] = False,
) -> None:
    """Index a vault: new and changed notes are chunked and embedded, deleted ones removed.

    Uses the running ingest service when one answers, else does the work in this process. Only what changed since
    the last sync is processed; --watch then keeps the index in step as you edit. Exits 1 when a note failed.
    """
    from secondbrain.ingest.commands import run_ingest

    async def go() -> int:
        config = config_with(vault=vault)
        root = config.settings.vault
        if root is None:
            raise InvalidInput("which vault? Give its folder (secondbrain ingest ~/notes) or set SECONDBRAIN_VAULT")
        return await run_ingest(config, root.resolve(), force=force, watch=watch, address=address, as_json=as_json)

    raise typer.Exit(run(go()))


def status(
    files: Annotated[
        bool, typer.Option("--files", help="List every file, not only those not indexed, with its date and its source.")
    ] = False,
    address: Annotated[
        str | None, typer.Option(help="host:port of an ingest service to ask; default the configured one.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False,
) -> None:
    """Show what the index holds: notes, chunks, the embedding model, the last sync, and why any file is not indexed."""
    from secondbrain.ingest.commands import run_status

    run(run_status(config_with(), files=files, address=address, as_json=as_json))
