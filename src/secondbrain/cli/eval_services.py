"""The services `secondbrain eval` measures, wired in: vaults are synced through the ingest service's API, and notes
ranked with retrieval's own ranking (`Retriever.rank`, the stages before passages are assembled), so what the
evaluation measures is what a chat turn reads. The evaluation itself imports no service; this module is where it
meets them.
"""

from __future__ import annotations

import functools
from pathlib import Path

from secondbrain.config import Config
from secondbrain.db import Database
from secondbrain.errors import InvalidInput
from secondbrain.evaluation import commands
from secondbrain.evaluation.questions import Question
from secondbrain.evaluation.ranking import Arm, ArmUnavailable
from secondbrain.evaluation.services import EvalServices
from secondbrain.ingest.commands import run_ingest, sync_in_process
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.pipeline import Ranking, RetrievalOptions, Retriever
from secondbrain.retrieve.server import build_retriever


class RetrieverRanker:
    """Retrieval's ranking over one index, as the evaluation reads it (a `ChunkRanker`)."""

    def __init__(self, retriever: Retriever, paths: dict[int, str]) -> None:
        r = self.retriever = retriever

        def changed(**settings: object) -> Retriever:
            """The same retriever with some of its settings changed, whatever the vault's."""
            changed = r.settings.model_copy(update=settings)
            return Retriever(r.db, r.embedder, r.condenser, r.make_reranker, changed, r.embedder_unavailable_reason)

        self.with_links = changed(wikilink_expansion=True)  # the hybrid+links arm
        self.with_rrf = changed(fusion="rrf")  # the hybrid-rrf arm
        # Each indexed note's path by its id, as ranked chunks name it.
        self.paths = paths
        self.notes = set(paths.values())

    @classmethod
    async def open(cls, config: Config, db: Database) -> RetrieverRanker:
        async with db.pool.acquire() as connection:
            rows = await connection.fetch("SELECT id, path FROM vault_files")
        return cls(build_retriever(config, db), {row["id"]: row["path"] for row in rows})

    def options(self, arm: Arm) -> RetrievalOptions:
        return RetrievalOptions.resolve(
            self.retriever.settings,
            mode=arm.mode,  # type: ignore[arg-type]
            condense=True,
            alternates=arm.alternates,
            rerank=arm.rerank,
        )

    async def rank_chunks(self, question: Question, arm: Arm, depth: int) -> list[str]:
        if arm.alternates and self.retriever.condenser.provider is None:
            raise ArmUnavailable(f"alternates need a language model: {self.retriever.condenser.unavailable_reason}")
        retriever = self.with_links if arm.links else self.with_rrf if arm.rrf else self.retriever
        try:
            ranking = await retriever.rank(
                question.text, list(question.history), Filters(), self.options(arm), depth=depth
            )
        except InvalidInput as error:
            raise ArmUnavailable(str(error)) from None
        _check(arm, ranking)
        found = (self.paths.get(ranked.fused.candidate.file_id) for ranked in ranking.ranked)
        return [path for path in found if path is not None]


def _check(arm: Arm, ranking: Ranking) -> None:
    if arm.mode != "lexical" and not ranking.vector_arm_ran:
        raise ArmUnavailable(f"the vector arm did not run: {ranking.vector_arm_skipped_reason}")
    if arm.rerank and not ranking.reranked:
        raise ArmUnavailable(f"no reranker ran: {ranking.rerank_skipped_reason or 'none is configured'}")


async def _sync(config: Config, vault: Path) -> int:
    return await run_ingest(config, vault, force=False, watch=False, address=None, as_json=False)


EVAL_SERVICES = EvalServices(sync=_sync, sync_here=sync_in_process, open_ranker=RetrieverRanker.open)

# `secondbrain eval` (bench/ runs it too).
run_eval = functools.partial(commands.run_eval, services=EVAL_SERVICES)
