"""The `secondbrain` Typer app, and what its commands share: configuration, errors as messages, the vault option."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Annotated, Any

import grpc
import typer

from secondbrain.config import Config, load_config
from secondbrain.errors import ConfigError, SecondbrainError

app = typer.Typer(
    help="Ask questions of your markdown notes; every answer cites the passages it read.\n\n"
    "Configuration comes from the environment (SECONDBRAIN_*, DATABASE_URL) and the vault's secondbrain.json; "
    "see docs/configuration.md for the table.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)

VaultOption = Annotated[
    Path | None, typer.Option("--vault", help="The vault folder; default SECONDBRAIN_VAULT.", show_default=False)
]


def config_with(**overrides: object) -> Config:
    """The configuration, with the options a command was given (those not None) over the environment's. Invalid, it
    ends the command with its message (exit 1), wherever the command reads it: a bad setting is an expected failure,
    not a traceback."""
    given = {key: value for key, value in overrides.items() if value is not None}
    with errors_as_messages():
        vault = given.get("vault")
        if isinstance(vault, Path) and not vault.is_dir():
            # Given on the command line, the folder is named as given, not as SECONDBRAIN_VAULT.
            what = "is a file, not a folder" if vault.exists() else "does not exist"
            raise ConfigError(f"the vault folder {vault} {what}: give the folder of your notes")
        return load_config(**given)


def message_of(error: SecondbrainError | grpc.aio.AioRpcError) -> str:
    """What the command prints when `error` ends it."""
    if isinstance(error, grpc.aio.AioRpcError):
        return f"secondbrain: {error.details()} ({error.code().name})"
    return f"secondbrain: {error}"


@contextlib.contextmanager
def errors_as_messages() -> Iterator[None]:
    """An error ends the command with its message, not a traceback."""
    try:
        yield
    except (SecondbrainError, grpc.aio.AioRpcError) as error:
        typer.echo(message_of(error), err=True)
        raise typer.Exit(1) from None


def run(
    coroutine: Coroutine[Any, Any, Any], loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None
) -> Any:
    """Run a command's coroutine (on a loop from `loop_factory`, else asyncio's own): an error ends it with its
    message, Ctrl-C with status 130, neither with a traceback."""
    message = None
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(coroutine)
    except (SecondbrainError, grpc.aio.AioRpcError) as error:
        message = message_of(error)
    except KeyboardInterrupt:
        pass
    # Out here the error is let go of, and with it what its traceback held: a command served in this process leaves
    # gRPC calls, channels and servers there, which keep gRPC's threads up. Collected now, not at exit, where the
    # embedded PostgreSQL stops (a fork) and gRPC would print "skipping fork() handlers".
    gc.collect()
    if message is None:
        raise typer.Exit(130)
    typer.echo(message, err=True)
    raise typer.Exit(1)
