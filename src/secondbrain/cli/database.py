"""The database: `migrate` applies the schema's migrations, or waits for another process to."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from secondbrain.cli.app import config_with, run
from secondbrain.errors import SecondbrainError


def migrate(
    wait: Annotated[
        float | None,
        typer.Option(
            "--wait",
            help="Apply nothing: wait up to this many seconds until another process (a migration Job, say) has "
            "applied every migration; exit 1 if it has not.",
            min=0,
            show_default=False,
        ),
    ] = None,
) -> None:
    """Apply pending database migrations and print what was applied.

    Safe to run while services run or start: migrators take turns under an advisory lock.
    """
    import time

    from secondbrain.db.database import check_pgvector, connect, redact
    from secondbrain.db.embedded import start_embedded
    from secondbrain.db.migrate import migrate as apply
    from secondbrain.db.migrate import pending
    from secondbrain.errors import FailedPrecondition

    async def wait_for_schema(dsn: str, within: float, connect_timeout: float) -> None:
        deadline = time.monotonic() + within
        missing: list[str] = []
        while True:
            try:
                connection = await connect(dsn, connect_timeout)
                try:
                    missing = [f"{m.version:04d}_{m.name}" for m in await pending(connection)]
                finally:
                    await connection.close()
                if not missing:
                    return
            except SecondbrainError as error:
                missing = [str(error)]
            if time.monotonic() >= deadline:
                raise FailedPrecondition(
                    f"the schema is not up to date after {within:g} s (waiting for: {', '.join(missing)}); has the "
                    "migration Job run? (kubectl logs job/secondbrain-migrate)"
                )
            await asyncio.sleep(2)

    async def go() -> None:
        settings = config_with().settings
        dsn = settings.database_url or await start_embedded(settings.embedded_pgdata)
        where = redact(dsn) if settings.database_url else f"the embedded PostgreSQL in {settings.embedded_pgdata}"
        if wait is not None:
            await wait_for_schema(dsn, wait, settings.db_connect_timeout_seconds)
            typer.echo(f"schema is up to date on {where}")
            return
        connection = await connect(dsn, settings.db_connect_timeout_seconds)
        try:
            await check_pgvector(connection)
            applied = await apply(connection)
        finally:
            await connection.close()
        if applied:
            for migration in applied:
                typer.echo(f"applied {migration.version:04d}_{migration.name}")
        typer.echo(f"schema is up to date on {where}")

    run(go())
