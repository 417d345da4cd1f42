"""Parsing a file in a worker process of its own, bounded in time and memory.

The parsers are native code (PDFium) or read compressed archives and pictures whose headers may lie, so one file
can ask for gigabytes or loop for minutes. The worker is a long-lived process (started once, spawned: never a fork
of a process running gRPC's threads) whose address space is capped with RLIMIT_AS; a file is given to it with a
deadline, and a worker past the deadline, or dead, is killed and replaced for the next file. Whatever happens, the
caller gets an Extracted or an Unreadable with a reason a person can act on.
"""

from __future__ import annotations

import multiprocessing
import resource
import threading
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from secondbrain.ingest.formats import processor
from secondbrain.ingest.formats.base import Extracted, Limits, Unreadable


@dataclass(frozen=True)
class Bounds:
    """The time one file may take, and the memory the worker may hold (its whole address space)."""

    seconds: float = 120.0
    memory_bytes: int = 2 * 1024**3


def _serve(connection: Connection, memory_bytes: int) -> None:
    """The worker's loop: (suffix, bytes, limits) in, ("ok", Extracted) or ("unreadable", reason) out."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    while True:
        try:
            suffix, data, limits = connection.recv()
        except EOFError:
            return
        try:
            reply: tuple[str, object] = ("ok", processor(suffix)(data, limits))
        except Unreadable as error:
            reply = ("unreadable", str(error))
        except MemoryError:
            reply = ("memory", "")
        except RecursionError:
            reply = ("unreadable", "its structure is nested too deeply to read")
        except Exception as error:  # a parser's own failure on a damaged file: the file's, not ingest's
            last = traceback.extract_tb(error.__traceback__)[-1:]
            where = f" in {last[0].name}" if last else ""
            reply = ("unreadable", f"the reader failed on it ({type(error).__name__}{where}: {str(error)[:160]})")
        del data
        connection.send(reply)


class Worker:
    """One worker process, used by one caller at a time (a lock), started when first needed."""

    def __init__(self, bounds: Bounds = Bounds()) -> None:
        self.bounds = bounds
        self._lock = threading.Lock()
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None

    def extract(self, suffix: str, data: bytes, limits: Limits) -> Extracted:
        """The file's parts, or Unreadable: the parser's reason, or that it took too long, needed too much memory
        or crashed."""
        with self._lock:
            connection = self._started()
            try:
                connection.send((suffix, data, limits))
                if not connection.poll(self.bounds.seconds):
                    self._stop()
                    raise Unreadable(
                        f"reading it took longer than {self.bounds.seconds:g} s (ingest.attachment_seconds); "
                        "it may be damaged, or built to be slow to read"
                    )
                kind, value = connection.recv()
            except (EOFError, OSError, BrokenPipeError):
                code = self._process.exitcode if self._process is not None else None
                self._stop()
                raise Unreadable(
                    f"the reader stopped while reading it (exit code {code}); it may be damaged, or need more memory "
                    f"than the {self._memory()} allowed (ingest.attachment_memory_mb)"
                ) from None
        if kind == "ok":
            assert isinstance(value, Extracted)
            return value
        if kind == "memory":
            raise Unreadable(
                f"reading it needs more memory than the {self._memory()} allowed (ingest.attachment_memory_mb)"
            )
        raise Unreadable(str(value))

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _memory(self) -> str:
        return f"{self.bounds.memory_bytes // 1024**2:,} MB"

    def _started(self) -> Connection:
        if self._process is not None and self._process.is_alive() and self._connection is not None:
            return self._connection
        self._stop()
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(
            target=_serve, args=(theirs, self.bounds.memory_bytes), name="secondbrain-attachments", daemon=True
        )
        process.start()
        theirs.close()
        self._process, self._connection = process, ours
        return ours

    def _stop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join(timeout=5)
            self._process = None


_workers: dict[Bounds, Worker] = {}
_workers_lock = threading.Lock()


def worker_for(bounds: Bounds) -> Worker:
    """This process's worker for `bounds` (one per distinct bounds: in practice one)."""
    with _workers_lock:
        worker = _workers.get(bounds)
        if worker is None:
            worker = _workers[bounds] = Worker(bounds)
        return worker
