"""Versioned SQL migrations: the one source of truth for the schema.

Files in `secondbrain/db/migrations/` are named `NNNN_description.sql` and applied in order, each in its own
transaction, recorded in `schema_migrations` with a checksum. A session-level advisory lock serialises every
migrator, so several services starting at once apply each file exactly once. An applied file that has since
changed is an error: migrations are append-only.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

from secondbrain.errors import FailedPrecondition

log = logging.getLogger(__name__)

# Any constant works as long as every migrator uses the same one; this is "secondbrain" folded into 63 bits.
ADVISORY_LOCK_KEY = int.from_bytes(hashlib.sha256(b"secondbrain.migrations").digest()[:8], "big") >> 1

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations() -> list[Migration]:
    """Every migration shipped with the package, in version order."""
    found = []
    for entry in resources.files("secondbrain.db.migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migration files share a version: {versions}")
    return found


async def migrate(connection: asyncpg.Connection, migrations: list[Migration] | None = None) -> list[Migration]:
    """Apply the migrations `connection`'s database lacks; returns those applied now."""
    migrations = load_migrations() if migrations is None else migrations
    await connection.execute("SELECT pg_advisory_lock($1)", ADVISORY_LOCK_KEY)
    try:
        await connection.execute(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    integer PRIMARY KEY,
                name       text NOT NULL,
                checksum   text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """
        )
        applied = {row["version"]: row for row in await connection.fetch("SELECT * FROM schema_migrations")}
        done = []
        for migration in migrations:
            row = applied.get(migration.version)
            if row is not None:
                if row["checksum"] != migration.checksum:
                    raise FailedPrecondition(
                        f"migration {migration.version:04d}_{migration.name}.sql changed after it was applied to "
                        "this database; migrations are append-only, so add a new one instead"
                    )
                continue
            async with connection.transaction():
                await connection.execute(migration.sql)
                await connection.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    migration.version,
                    migration.name,
                    migration.checksum,
                )
            log.info("applied migration", extra={"version": migration.version, "migration": migration.name})
            done.append(migration)
        return done
    finally:
        await connection.execute("SELECT pg_advisory_unlock($1)", ADVISORY_LOCK_KEY)


async def pending(connection: asyncpg.Connection, migrations: list[Migration] | None = None) -> list[Migration]:
    """The migrations `connection`'s database has not applied yet (read only: nothing is locked or changed)."""
    migrations = load_migrations() if migrations is None else migrations
    exists = await connection.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    rows = await connection.fetch("SELECT version FROM schema_migrations") if exists else []
    applied = {row["version"] for row in rows}
    return [m for m in migrations if m.version not in applied]
