"""What a database error means to the caller: unreachable (UNAVAILABLE, retry when it is back) or a query the
database gave up on (DEADLINE_EXCEEDED, a smaller request may go through). Each read from a real error."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import asyncpg
import pytest

from secondbrain.db.database import database_gave_up, lost_database
from secondbrain.errors import TimedOut, Unavailable


async def _raised(work: Awaitable[object]) -> BaseException:
    with pytest.raises(BaseException) as raised:
        await work
    return raised.value


async def test_a_server_that_never_answers_a_connection_is_unreachable() -> None:
    silent = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    try:
        error = await _raised(asyncpg.connect(f"postgresql://nobody@127.0.0.1:{port}/none", timeout=0.5))
    finally:
        silent.close()
    assert isinstance(error, TimeoutError)
    assert isinstance(lost_database(error), Unavailable)
    assert database_gave_up(error) is None, "it never got a query to give up on"


async def test_a_query_past_its_time_is_one_the_database_gave_up_on(connection: asyncpg.Connection) -> None:
    # The pool's command timeout (client side) ...
    error = await _raised(connection.execute("SELECT pg_sleep(5)", timeout=0.3))
    assert isinstance(error, TimeoutError)
    assert isinstance(database_gave_up(error), TimedOut) and lost_database(error) is None
    # ... and the server's statement timeout.
    await connection.execute("SET statement_timeout = '100ms'")
    error = await _raised(connection.execute("SELECT pg_sleep(5)"))
    assert isinstance(error, asyncpg.QueryCanceledError)
    assert isinstance(database_gave_up(error), TimedOut) and lost_database(error) is None


async def test_a_refused_connection_is_unreachable() -> None:
    closed = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
    port = closed.sockets[0].getsockname()[1]
    closed.close()
    await closed.wait_closed()
    error = await _raised(asyncpg.connect(f"postgresql://nobody@127.0.0.1:{port}/none", timeout=2))
    assert isinstance(lost_database(error), Unavailable) and database_gave_up(error) is None
