"""Ranking notes for a question the way a chat turn's retrieval does, one arm (or optional stage) at a time.

Each arm is `Retriever.rank` (condense, search, fuse, links, rerank: the stages before passages are assembled) with
its knobs set, deep enough for Recall@100; chunks roll up to notes, a note ranking where its best chunk ranks. An
optional stage that needs something this machine lacks (an LLM for alternates, a reranker endpoint) is reported as
unavailable with the reason, never scored as if it had run.
"""

from __future__ import annotations

from dataclasses import dataclass

from secondbrain.errors import InvalidInput
from secondbrain.evaluation.questions import Question
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.pipeline import Ranking, Retriever
from secondbrain.retrieve.pipeline import RetrievalOptions as Options

# Notes ranked per question: enough for Recall@100.
DEPTH = 100
# Chunks fetched per arm to fill DEPTH notes (a note has several chunks).
CHUNKS_PER_NOTE = 3


@dataclass(frozen=True)
class Arm:
    name: str
    mode: str
    alternates: bool = False
    rerank: bool = False
    links: bool = False
    description: str = ""


ARMS: dict[str, Arm] = {
    arm.name: arm
    for arm in (
        Arm("lexical", "lexical", description="BM25 over chunks only"),
        Arm("vector", "vector", description="embedding similarity only"),
        Arm("hybrid", "hybrid", description="both arms fused by reciprocal rank fusion"),
        Arm("hybrid+links", "hybrid", links=True, description="plus the notes top passages [[link]] to"),
        Arm("hybrid+alternates", "hybrid", alternates=True, description="plus an LLM's alternate phrasings"),
        Arm("hybrid+rerank", "hybrid", rerank=True, description="plus a cross-encoder reranker"),
    )
}


class ArmUnavailable(Exception):
    """The arm cannot run here; the message says why."""


@dataclass
class NoteRanker:
    retriever: Retriever
    # The same retriever with wikilink expansion on, whatever the vault's setting (the hybrid+links arm).
    with_links: Retriever
    paths: dict[int, str]

    @classmethod
    async def open(cls, retriever: Retriever) -> NoteRanker:
        async with retriever.db.pool.acquire() as connection:
            rows = await connection.fetch("SELECT id, path FROM vault_files")
        r = retriever
        settings = r.settings.model_copy(update={"wikilink_expansion": True})
        with_links = Retriever(r.db, r.embedder, r.condenser, r.make_reranker, settings, r.embedder_unavailable_reason)
        return cls(retriever, with_links, {row["id"]: row["path"] for row in rows})

    def options(self, arm: Arm) -> Options:
        return Options.resolve(
            self.retriever.settings,
            mode=arm.mode,  # type: ignore[arg-type]
            condense=True,
            alternates=arm.alternates,
            rerank=arm.rerank,
        )

    async def rank(self, question: Question, arm: Arm, depth: int = DEPTH) -> list[str]:
        """The top `depth` note paths for `question` under `arm`, best first. Raises ArmUnavailable when a stage
        the arm needs did not run."""
        if arm.alternates and self.retriever.condenser.provider is None:
            raise ArmUnavailable(f"alternates need a language model: {self.retriever.condenser.unavailable_reason}")
        retriever = self.with_links if arm.links else self.retriever
        try:
            ranking = await retriever.rank(
                question.text, list(question.history), Filters(), self.options(arm), depth=depth * CHUNKS_PER_NOTE
            )
        except InvalidInput as error:
            raise ArmUnavailable(str(error)) from None
        _check(arm, ranking)
        notes: dict[str, None] = {}
        for ranked in ranking.ranked:
            path = self.paths.get(ranked.fused.candidate.file_id)
            if path is not None:
                notes.setdefault(path, None)
                if len(notes) >= depth:
                    break
        return list(notes)


def _check(arm: Arm, ranking: Ranking) -> None:
    if arm.mode != "lexical" and not ranking.vector_arm_ran:
        raise ArmUnavailable(f"the vector arm did not run: {ranking.vector_arm_skipped_reason}")
    if arm.rerank and not ranking.reranked:
        raise ArmUnavailable(f"no reranker ran: {ranking.rerank_skipped_reason or 'none is configured'}")
