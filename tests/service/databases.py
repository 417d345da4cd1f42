"""A second database beside the `database_url` fixture's: another vault's, for what must tell the two apart."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from secondbrain.db.database import with_database
from secondbrain.db.migrate import migrate


@pytest.fixture
async def other_database(postgres_server: str) -> AsyncIterator[str]:
    """A fresh, migrated database on the test server, dropped afterwards."""
    name = f"sb_test_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(postgres_server)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        url = with_database(postgres_server, name)
        connection = await asyncpg.connect(url)
        try:
            await migrate(connection)
        finally:
            await connection.close()
        yield url
        await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    finally:
        await admin.close()
