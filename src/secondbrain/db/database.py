"""Opening the database a process uses: choose the server, check it, migrate it, pool connections to it."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import asyncpg
from pgvector.asyncpg import register_vector

from secondbrain.config import Settings
from secondbrain.db.embedded import start_embedded
from secondbrain.db.migrate import migrate, pending
from secondbrain.errors import FailedPrecondition, TimedOut, Unavailable

log = logging.getLogger(__name__)

MIN_PGVECTOR = (0, 8)
CLOSE_TIMEOUT_SECONDS = 5.0


def redact(dsn: str) -> str:
    """The DSN with its password replaced, safe for messages and logs."""
    parts = urlsplit(dsn)
    if not parts.password:
        return dsn
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def with_database(dsn: str, database: str) -> str:
    """`dsn` pointing at another database on the same server."""
    return urlunsplit(urlsplit(dsn)._replace(path=f"/{database}"))


# Errors that mean the server went away or is not accepting connections yet, rather than a bad query.
_LOST_CONNECTION = (
    asyncpg.PostgresConnectionError,  # includes CannotConnectNowError (starting or shutting down)
    asyncpg.ConnectionDoesNotExistError,  # the connection closed mid-query
    asyncpg.AdminShutdownError,  # "terminating connection due to administrator command"
    asyncpg.CrashShutdownError,
    asyncpg.exceptions.ConnectionFailureError,
)


def lost_database(error: BaseException) -> Unavailable | None:
    """An Unavailable saying the database cannot be reached, when `error` is that (a refused, broken or unanswered
    connection, a server shutting down); None for any other error, a query that ran out of time included
    (TimeoutError is an OSError, but the database answered)."""
    cause: BaseException | None = error
    while cause is not None:
        refused = isinstance(cause, OSError) and not isinstance(cause, TimeoutError) and _raised_in_asyncpg(cause)
        if isinstance(cause, _LOST_CONNECTION) or refused or _connecting_timed_out(cause):
            return Unavailable(
                f"the database is not reachable ({type(cause).__name__}: {cause}); the request can be retried "
                "when it is back, and the service reconnects by itself"
            )
        cause = cause.__cause__ or cause.__context__
    return None


def database_gave_up(error: BaseException) -> TimedOut | None:
    """A TimedOut saying so, when `error` is the database giving up on a query (its statement timeout, or the pool's
    command timeout); None otherwise. Found by a probe: a note the database took too long to store was an INTERNAL
    error with nothing to act on."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, asyncpg.QueryCanceledError) or (
            isinstance(cause, TimeoutError) and _raised_in_asyncpg(cause) and not _connecting_timed_out(cause)
        ):
            return TimedOut(
                "the database gave up on this request before it finished (its time limit); nothing of a write was "
                "stored. A smaller request may go through: a note with fewer chunks or sections, a shorter question"
            )
        cause = cause.__cause__ or cause.__context__
    return None


def _connecting_timed_out(error: BaseException) -> bool:
    """Whether `error` is a connection to the database that was not answered in time: the database is unreachable,
    it did not give up on a query (found by a review: a server that accepts and never answers read as the latter)."""
    if not isinstance(error, TimeoutError):
        return False
    # The timeout is raised where the wait began (asyncpg.connect); what it cut short, in its context, was connecting.
    cause: BaseException | None = error
    while cause is not None:
        if _raised_in_asyncpg(cause, "asyncpg.connect_utils"):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _raised_in_asyncpg(error: BaseException, module: str = "asyncpg") -> bool:
    traceback = error.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_globals.get("__name__", "").startswith(module):
            return True
        traceback = traceback.tb_next
    return False


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


async def connect(dsn: str, connect_timeout: float) -> asyncpg.Connection:
    """One connection, with errors a person can act on."""
    try:
        return await asyncpg.connect(dsn, timeout=connect_timeout)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
        raise Unavailable(
            f"cannot connect to PostgreSQL at {redact(dsn)}: {error or type(error).__name__}. "
            "Check that the server is running and DATABASE_URL is right, or unset DATABASE_URL to use the "
            "embedded PostgreSQL."
        ) from error


async def check_pgvector(connection: asyncpg.Connection) -> str:
    """Fail unless pgvector >= 0.8 is installed or installable; returns its version."""
    row = await connection.fetchrow(
        "SELECT default_version, installed_version FROM pg_available_extensions WHERE name = 'vector'"
    )
    if row is None:
        raise FailedPrecondition(
            "the PostgreSQL server has no pgvector extension; install pgvector 0.8 or newer on it "
            "(for example the pgvector/pgvector image), or unset DATABASE_URL to use the embedded PostgreSQL"
        )
    version = row["installed_version"] or row["default_version"]
    if _version_tuple(version)[:2] < MIN_PGVECTOR:
        hint = "run ALTER EXTENSION vector UPDATE" if row["installed_version"] else "upgrade pgvector on the server"
        raise FailedPrecondition(f"pgvector {version} is too old: secondbrain needs 0.8 or newer; {hint}")
    return str(version)


async def _init_connection(connection: asyncpg.Connection) -> None:
    await register_vector(connection)


async def _keep_session(connection: asyncpg.Connection) -> None:
    """A pool's reset for a process whose statements leave nothing in a session (see `Database.open`): nothing to
    run. asyncpg has already rolled back a transaction left open and dropped the connection's listeners."""


@dataclass
class Database:
    """The pool a process shares, and where it points."""

    pool: asyncpg.Pool
    dsn: str
    embedded: bool

    @classmethod
    async def open(cls, settings: Settings, *, session_state: bool = True, name: str = "secondbrain") -> Database:
        """Connect to DATABASE_URL or the embedded server, check pgvector, migrate (unless
        SECONDBRAIN_MIGRATE_ON_START is false: a migration Job does it), and pool connections.

        `session_state=False` says this process's statements leave nothing in a connection's session: no
        session-level SET, advisory lock, LISTEN or cursor outside a transaction (settings go in `SET LOCAL`). Its
        pool then takes a connection back without asyncpg's reset statement (unlocking, unlistening, `RESET ALL`),
        a round trip to the server on every release: three or four for each Retrieve.

        `name` is the pool's `application_name`, so `pg_stat_activity` says which service holds each session."""
        embedded = settings.database_url is None
        dsn = await start_embedded(settings.embedded_pgdata) if embedded else settings.database_url
        assert dsn is not None
        connection = await connect(dsn, settings.db_connect_timeout_seconds)
        try:
            version = await check_pgvector(connection)
            if settings.migrate_on_start:
                await migrate(connection)
            elif missing := await pending(connection):
                # Without this, the pool's first connection fails on the vector type with nothing to act on.
                raise FailedPrecondition(
                    f"the database lacks {len(missing)} migration(s) (from {missing[0].name}) and "
                    "SECONDBRAIN_MIGRATE_ON_START is false: run `secondbrain migrate` (on Kubernetes, the "
                    "secondbrain-migrate Job), or set SECONDBRAIN_MIGRATE_ON_START=true"
                )
        finally:
            await connection.close()
        pool = await asyncpg.create_pool(
            dsn,
            min_size=1,
            max_size=settings.db_pool_max_size,
            init=_init_connection,
            reset=None if session_state else _keep_session,
            timeout=settings.db_connect_timeout_seconds,
            command_timeout=60,
            server_settings={"application_name": name},
        )
        log.info("database ready", extra={"database": redact(dsn), "embedded": embedded, "pgvector": version})
        return cls(pool=pool, dsn=dsn, embedded=embedded)

    async def close(self) -> None:
        """Close the pool; connections still held after a few seconds (a task cancelled mid-query) are cut."""
        try:
            await asyncio.wait_for(self.pool.close(), CLOSE_TIMEOUT_SECONDS)
        except TimeoutError:
            log.warning("database connections still busy at shutdown; terminating them")
            self.pool.terminate()
