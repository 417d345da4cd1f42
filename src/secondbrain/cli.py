"""The `secondbrain` command."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Coroutine, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import grpc
import typer

from secondbrain.config import Config, load_config
from secondbrain.errors import InvalidInput, SecondbrainError

app = typer.Typer(
    help="Ask questions of your markdown notes; every answer cites the passages it read.\n\n"
    "Configuration comes from the environment (SECONDBRAIN_*, DATABASE_URL) and the vault's secondbrain.json; "
    "see README.md for the table.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class Service(StrEnum):
    ingest = "ingest"
    retrieve = "retrieve"
    chat = "chat"


class Server(StrEnum):
    ingest = "ingest"
    retrieve = "retrieve"
    chat = "chat"
    shim = "shim"
    envoy = "envoy"


VaultOption = Annotated[
    Path | None, typer.Option("--vault", help="The vault folder; default SECONDBRAIN_VAULT.", show_default=False)
]


def _config(**overrides: object) -> Config:
    return load_config(**{key: value for key, value in overrides.items() if value is not None})


@contextlib.contextmanager
def _errors_as_messages() -> Iterator[None]:
    """An error ends the command with its message, not a traceback."""
    try:
        yield
    except SecondbrainError as error:
        typer.echo(f"secondbrain: {error}", err=True)
        raise typer.Exit(1) from None
    except grpc.aio.AioRpcError as error:
        typer.echo(f"secondbrain: {error.details()} ({error.code().name})", err=True)
        raise typer.Exit(1) from None


def _run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a command's coroutine, its errors as messages."""
    with _errors_as_messages():
        return asyncio.run(coroutine)


@app.command()
def serve(
    service: Annotated[Server, typer.Argument(help="Which server to run.")],
    port: Annotated[
        int | None,
        typer.Option(
            help="Port to listen on (0: any free port); default from SECONDBRAIN_<SERVICE>_PORT "
            "(SECONDBRAIN_GATEWAY_PORT for envoy)."
        ),
    ] = None,
    host: Annotated[str | None, typer.Option(help="Address to bind; default SECONDBRAIN_HOST (127.0.0.1).")] = None,
    vault: VaultOption = None,
) -> None:
    """Run one server until SIGTERM or Ctrl-C.

    ingest, retrieve and chat are gRPC services: each uses DATABASE_URL, or starts (or joins) the embedded
    PostgreSQL when that is unset, applies pending migrations, and answers the gRPC health check once ready.
    shim is the REST + server-sent events API; envoy is the gateway a browser talks to (grpc-web, /api/ and the
    web UI), in front of the others at their configured addresses.
    """
    if service is Server.envoy:
        from secondbrain.gateway.server import main_envoy

        with _errors_as_messages():
            main_envoy(_config(host=host, vault=vault), port)
        return

    async def go() -> None:
        config = _config(host=host, vault=vault)
        if service is Server.shim:
            from secondbrain.gateway.server import main_shim

            await main_shim(config, port)
            return
        module = importlib.import_module(f"secondbrain.{service.value}.server")
        await module.main(config, port)

    _run(go())


@app.command("gateway-config")
def gateway_config(
    kubernetes: Annotated[
        bool, typer.Option("--kubernetes", help="Upstreams by Kubernetes service name, listening on every interface.")
    ] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of printing.", show_default=False)
    ] = None,
) -> None:
    """Render Envoy's configuration from the gateway template and check it with Envoy itself.

    Without --kubernetes it points at the services on this machine (their configured ports), as `secondbrain up`
    runs it. CORS origins come from SECONDBRAIN_CORS_ORIGINS.
    """
    import tempfile

    from secondbrain.gateway.envoy import validate
    from secondbrain.gateway.envoy_config import kubernetes_layout, local_layout, render

    with _errors_as_messages():
        settings = _config().settings
        text = render(kubernetes_layout(settings) if kubernetes else local_layout(settings))
        with tempfile.TemporaryDirectory() as directory:
            checked = Path(directory) / "envoy.yaml"
            checked.write_text(text, encoding="utf-8")
            validate(checked)
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {output} (Envoy accepts it)", err=True)


@app.command()
def up(vault: VaultOption = None) -> None:
    """Run the whole system, supervised, until Ctrl-C.

    Prepares the database first, starts ingest, retrieve and chat, then the REST shim and Envoy, waits until each
    is ready, and prints their addresses: open the gateway's in a browser. If one of them dies, everything stops
    and the message says which.
    """
    from secondbrain import supervisor

    code = _run(supervisor.run(_config(vault=vault)))
    raise typer.Exit(code)


@app.command()
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
        config = _config(vault=vault)
        root = config.settings.vault
        if root is None:
            raise InvalidInput("which vault? Give its folder (secondbrain ingest ~/notes) or set SECONDBRAIN_VAULT")
        return await run_ingest(config, root.resolve(), force=force, watch=watch, address=address, as_json=as_json)

    raise typer.Exit(_run(go()))


@app.command()
def status(
    files: Annotated[bool, typer.Option("--files", help="List every file, not only those not indexed.")] = False,
    address: Annotated[
        str | None, typer.Option(help="host:port of an ingest service to ask; default the configured one.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False,
) -> None:
    """Show what the index holds: notes, chunks, the embedding model, the last sync, and why any file is not indexed."""
    from secondbrain.ingest.commands import run_status

    _run(run_status(_config(), files=files, address=address, as_json=as_json))


FolderOption = Annotated[
    list[str] | None, typer.Option("--folder", help="Only notes under this folder (repeatable).", show_default=False)
]
TagOption = Annotated[
    list[str] | None,
    typer.Option("--tag", help="Only notes with this tag or a child of it (repeatable).", show_default=False),
]
AddressOption = Annotated[
    str | None, typer.Option(help="host:port of a retrieve service to use; default the configured one.")
]


class SearchMode(StrEnum):
    hybrid = "hybrid"
    keyword = "keyword"
    semantic = "semantic"


class RetrievalMode(StrEnum):
    hybrid = "hybrid"
    lexical = "lexical"
    vector = "vector"


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    mode: Annotated[SearchMode, typer.Option(help="keyword: every word must match; semantic: by meaning.")] = (
        SearchMode.hybrid
    ),
    folder: FolderOption = None,
    tag: TagOption = None,
    limit: Annotated[int, typer.Option(help="Most notes to list.", min=1, max=100)] = 10,
    address: AddressOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the ranked notes as JSON.")] = False,
) -> None:
    """Find notes: keyword (every word, "phrases", -exclusions, and substrings of titles and text), semantic, or
    both fused (the default). Prints each note with a snippet."""
    from secondbrain.retrieve.commands import run_search

    _run(
        run_search(
            _config(),
            query,
            mode=mode.value,
            folders=folder or [],
            tags=tag or [],
            limit=limit,
            address=address,
            as_json=as_json,
        )
    )


@app.command()
def retrieve(
    question: Annotated[str, typer.Argument(help="A question about your notes.")],
    passages: Annotated[int, typer.Option(help="Passages to return (0: the configured default).", min=0, max=50)] = 0,
    mode: Annotated[RetrievalMode, typer.Option(help="Which arms run.")] = RetrievalMode.hybrid,
    folder: FolderOption = None,
    tag: TagOption = None,
    condense: Annotated[bool, typer.Option(help="Let an LLM add alternate phrasings of a broad question.")] = True,
    rerank: Annotated[
        bool | None,
        typer.Option("--rerank/--no-rerank", help="Rerank with the configured reranker.", show_default=False),
    ] = None,
    address: AddressOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan, ranked notes and passages as JSON.")] = False,
) -> None:
    """Show the numbered passages a chat answer would read for QUESTION, with where each comes from."""
    from secondbrain.retrieve.commands import run_retrieve

    _run(
        run_retrieve(
            _config(),
            question,
            mode=mode.value,
            folders=folder or [],
            tags=tag or [],
            passages=passages,
            condense=condense,
            rerank=rerank,
            address=address,
            as_json=as_json,
        )
    )


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="A question about your notes.")],
    conversation: Annotated[
        str | None, typer.Option(help="Continue this conversation (its id); default a new one.", show_default=False)
    ] = None,
    address: Annotated[str | None, typer.Option(help="host:port of a chat service to use.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print each event (sources, delta, done) as JSON.")] = False,
) -> None:
    """Ask a question: the answer streams in as it is written, citing passages [n] listed under it.

    Uses the configured chat provider (see `secondbrain --help`); with no API key set, the extractive provider
    quotes the best-matching sentences of your notes instead.
    """
    from secondbrain.chat.commands import run_ask

    raise typer.Exit(_run(run_ask(_config(), question, conversation=conversation, address=address, as_json=as_json)))


@app.command("eval")
def evaluate(
    qa: Annotated[
        Path | None,
        typer.Option(
            "--qa",
            help="A question file: JSON lines of {id, question, expected (note paths, best first), history?, kind?}. "
            "Default: .secondbrain/eval.jsonl in the vault.",
            show_default=False,
        ),
    ] = None,
    vault: VaultOption = None,
    beir: Annotated[
        Path | None,
        typer.Option(
            "--beir",
            help="A BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/). Indexed once into a database of its "
            "own, reused on the next run.",
            show_default=False,
        ),
    ] = None,
    split: Annotated[str, typer.Option(help="The BEIR qrels split.")] = "test",
    arm: Annotated[
        list[str] | None,
        typer.Option(
            "--arm",
            help="Run only this arm (repeatable): lexical, vector, hybrid, hybrid+links, hybrid+alternates, "
            "hybrid+rerank.",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.", min=1, show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every figure as JSON, keyed by arm and metric.")] = (
        False
    ),
) -> None:
    """Measure retrieval: rank each question's notes with each arm and score them (nDCG@10, Recall@1/5/10/100,
    MRR@10) with ir-measures.

    With --qa (or the vault's .secondbrain/eval.jsonl) it indexes the vault first (only what changed), reports per
    question kind, and lists the questions hybrid missed with what came instead. With --beir it runs a BEIR
    benchmark. Arms that need an LLM (alternates) or a reranker endpoint are skipped with the reason when absent.
    """
    from secondbrain.evaluation.commands import run_eval
    from secondbrain.evaluation.ranking import ARMS

    _run(
        run_eval(
            _config(vault=vault),
            qa=qa,
            vault=vault,
            beir=beir,
            split=split,
            arms=arm or list(ARMS),
            limit=limit,
            as_json=as_json,
        )
    )


@app.command()
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
        settings = _config().settings
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

    _run(go())


@app.command()
def health(
    service: Annotated[Service | None, typer.Argument(help="Check one service; default all three.")] = None,
    address: Annotated[str | None, typer.Option(help="host:port to check instead of the configured address.")] = None,
) -> None:
    """Ask running services whether they are serving (the standard gRPC health check).

    Exits 0 only when every service checked reports SERVING.
    """
    from secondbrain.service.health_client import check_health

    async def go() -> bool:
        settings = _config().settings
        names = [service] if service else list(Service)
        healthy = True
        for name in names:
            target = address or settings.address_of(name.value)
            status = await check_health(target)
            typer.echo(f"{name.value:<9} {target:<22} {status}")
            healthy = healthy and status == "SERVING"
        return healthy

    if not _run(go()):
        raise typer.Exit(1)
