"""A cluster of real processes for the fault tests: one per module, since each start costs every part's import."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.reliability.cluster import Cluster, Postgres
from tests.reliability.vault import write_vault

NOTES = 120


@pytest.fixture(scope="module")
async def postgres() -> AsyncIterator[Postgres]:
    with tempfile.TemporaryDirectory(prefix="secondbrain-reliability-pg-") as directory:
        server = Postgres(Path(directory))
        try:
            yield server
        finally:
            server.close()


@pytest.fixture(scope="module")
async def cluster(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Cluster]:
    workdir = tmp_path_factory.mktemp("cluster")
    vault = workdir / "vault"
    write_vault(vault, NOTES, version="versionone")
    handle = Cluster(workdir, postgres.dsn, vault)
    handle.write_settings()
    await handle.migrate()
    try:
        await handle.start()
        yield handle
    finally:
        await handle.close()
