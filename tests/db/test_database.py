"""Opening the database: the pgvector version gate, and the redaction of passwords in messages."""

from __future__ import annotations

import pytest

from secondbrain.db.database import check_pgvector, redact
from secondbrain.errors import FailedPrecondition


class FakeCatalog:
    """Answers the one catalog query check_pgvector makes, as a server with the given pgvector would."""

    def __init__(self, row: dict | None) -> None:
        self.row = row

    async def fetchrow(self, query: str) -> dict | None:
        assert "pg_available_extensions" in query
        return self.row


async def test_real_server_passes(db) -> None:
    async with db.pool.acquire() as connection:
        version = await check_pgvector(connection)
    assert tuple(int(part) for part in version.split(".")[:2]) >= (0, 8)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (None, "has no pgvector extension"),
        ({"default_version": "0.7.4", "installed_version": None}, "upgrade pgvector on the server"),
        ({"default_version": "0.8.1", "installed_version": "0.5.0"}, "ALTER EXTENSION vector UPDATE"),
    ],
)
async def test_missing_or_old_pgvector_is_refused(row: dict | None, message: str) -> None:
    with pytest.raises(FailedPrecondition, match=message):
        await check_pgvector(FakeCatalog(row))


async def test_installable_new_pgvector_passes() -> None:
    assert await check_pgvector(FakeCatalog({"default_version": "0.8.0", "installed_version": None})) == "0.8.0"


def test_redact_hides_only_the_password() -> None:
    assert redact("postgresql://me:s3cret@db:5432/notes") == "postgresql://me:***@db:5432/notes"
    assert redact("postgresql://me@db/notes") == "postgresql://me@db/notes"
    assert redact("postgresql://postgres:@/postgres?host=/tmp/x") == "postgresql://postgres:@/postgres?host=/tmp/x"
