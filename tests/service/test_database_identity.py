"""A running service tells which database it serves, and a command uses it only when that is its own database: a
command configured for another one works in its own process and says so."""

from __future__ import annotations

import contextlib
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rich.console import Console

from secondbrain.config import Config, Settings
from secondbrain.db import Database
from secondbrain.retrieve.server import create_server
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.access import connect
from secondbrain.service.health_client import health_of
from secondbrain.service.runner import ServiceDeps
from secondbrain.service.server import SERVED_DATABASE, RunningServer
from tests.service.databases import other_database  # noqa: F401 - a fixture


def _with(config: Config, **settings: object) -> Config:
    """`config` with some settings changed."""
    return Config(settings=config.settings.model_copy(update=settings), vault=config.vault)


def _identity(**settings: object) -> str:
    """The identity of these settings, whatever DATABASE_URL the environment running the tests has."""
    return Settings(**{"database_url": None, **settings}).database_identity  # type: ignore[arg-type]


def test_one_database_however_its_url_is_written() -> None:
    same = _identity(database_url="postgresql://me:secret@DB.example:5432/notes?sslmode=require")
    assert _identity(database_url="postgres://me:other-secret@db.example/notes") == same
    assert _identity(database_url="postgresql://me@db.example:5433/notes") != same
    assert _identity(database_url="postgresql://me@db.example/other") != same
    # A hash: nothing of the URL (a host, a user, a password) is told to whoever asks a health check.
    assert len(same) == 16 and int(same, 16) >= 0


def test_the_embedded_database_is_its_data_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    here = _identity(data_dir=tmp_path / "a")
    assert _identity(data_dir=Path("a")) == here, "relative to where the process runs"
    assert _identity(data_dir=tmp_path / "b") != here
    assert _identity(data_dir=tmp_path / "a", database_url="postgresql://me@localhost/a") != here


@contextlib.asynccontextmanager
async def _running_retrieve(config: Config, db: Database, *, telling: bool = True) -> AsyncIterator[RunningServer]:
    """A retrieve server on a free port, serving `db`; `telling` as `secondbrain serve` does (an older server
    does not)."""
    told = SERVED_DATABASE.set(config.settings.database_identity if telling else None)
    try:
        # one_command: no model loaded in the background; these calls never embed.
        running = await create_server("127.0.0.1:0", ServiceDeps(config, db), one_command=True)
    finally:
        SERVED_DATABASE.reset(told)
    await running.start()
    try:
        yield running
    finally:
        await running.stop(grace=1)


async def _notes_listed(config: Config) -> tuple[list[str], str]:
    """The paths `ListNotes` gives a command configured by `config`, and what the command said."""
    text = io.StringIO()
    console = Console(file=text, width=300)
    async with connect(config, "retrieve", None, pb_grpc.RetrieveServiceStub, console) as stub:
        reply = await stub.ListNotes(pb.ListNotesRequest(), timeout=10)
    return [note.path for note in reply.notes], text.getvalue().strip()


@pytest.fixture
async def a_note(db: Database) -> str:
    """One note in the `config` fixture's database, so an answer shows which database it came from."""
    async with db.pool.acquire() as connection:
        await connection.execute(
            "INSERT INTO vault_files (path, title, body, content_hash, status) "
            "VALUES ('Ours.md', 'Ours', 'alpha', 'hash', 'indexed')"
        )
    return "Ours.md"


async def test_a_health_check_tells_the_database_served(config: Config, db: Database) -> None:
    async with _running_retrieve(config, db) as running:
        health = await health_of(f"127.0.0.1:{running.port}", "secondbrain.retrieve.v1.RetrieveService")
    assert health.status == "SERVING" and health.database == config.settings.database_identity


async def test_a_command_of_another_database_works_in_its_own_process_and_says_so(
    config: Config,
    db: Database,
    a_note: str,
    other_database: str,  # noqa: F811 - the fixture
) -> None:
    async with _running_retrieve(config, db) as running:
        address = f"127.0.0.1:{running.port}"
        ours = _with(config, retrieve_address=address)
        assert await _notes_listed(ours) == ([a_note], ""), "the same database: the running service, silently"

        theirs = _with(config, retrieve_address=address, database_url=other_database)
        notes, said = await _notes_listed(theirs)
    assert notes == [], "answered from the command's own (empty) database, not the running service's"
    assert said == f"The running retrieve service at {address} serves another database; working in this process."


async def test_a_server_that_does_not_tell_is_taken_as_serving_the_same_database(
    config: Config,
    db: Database,
    a_note: str,
    other_database: str,  # noqa: F811 - the fixture
) -> None:
    """A server from before the header: used as before, whatever the command's database."""
    async with _running_retrieve(config, db, telling=False) as running:
        theirs = _with(config, retrieve_address=f"127.0.0.1:{running.port}", database_url=other_database)
        assert await _notes_listed(theirs) == ([a_note], "")
