"""A connection to a fresh migrated database, with pgvector's type registered, for tests of the schema itself."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest
from pgvector.asyncpg import register_vector


@pytest.fixture
async def connection(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(database_url)
    await register_vector(connection)
    yield connection
    await connection.close()
