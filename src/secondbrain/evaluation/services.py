"""What the evaluation needs of the services, handed to it by what composes them (the CLI).

The evaluation imports no service: it indexes through the ingest service's API and ranks with retrieval's own
ranking, both reached through the callables here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

from secondbrain.config import Config
from secondbrain.db import Database
from secondbrain.evaluation.answers import Answerer
from secondbrain.evaluation.ranking import ChunkRanker


@dataclass(frozen=True)
class EvalServices:
    # Sync a vault (only what changed), progress on stderr: through the running ingest service when one answers,
    # else in this process.
    sync: Callable[[Config, Path], Awaitable[object]]
    # Sync a benchmark's vault into the database its configuration names, always in this process: a running ingest
    # service has an index of its own.
    sync_here: Callable[[Config, Path], Awaitable[object]]
    # Retrieval's ranking over the index in a database.
    open_ranker: Callable[[Config, Database], Awaitable[ChunkRanker]]
    # The chat service answering questions (the running one, else one in this process), and which provider and
    # model it answers with.
    open_answerer: Callable[[Config], AbstractAsyncContextManager[tuple[Answerer, str]]]
