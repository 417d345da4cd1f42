"""Ranking notes for a question the way a chat turn's retrieval does, one arm (or optional stage) at a time.

Each arm is retrieval's own ranking (condense, search, fuse, links, rerank: the stages before passages are assembled)
with its knobs set, deep enough for Recall@100; chunks roll up to notes, a note ranking where its best chunk ranks. An
optional stage that needs something this machine lacks (an LLM for alternates, a reranker endpoint) is reported as
unavailable with the reason, never scored as if it had run.

The evaluation imports no service: retrieval's ranking comes as a `ChunkRanker`, handed over by what composes the
services (the CLI), so what it measures is what a chat turn reads.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from secondbrain.evaluation.questions import Question, page_unit

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
    # Fuse each query's arms by reciprocal rank fusion, whatever the vault's `retrieve.fusion` says.
    rrf: bool = False
    description: str = ""


ARMS: dict[str, Arm] = {
    arm.name: arm
    for arm in (
        Arm("lexical", "lexical", description="BM25 over chunks only"),
        Arm("vector", "vector", description="embedding similarity only"),
        Arm("hybrid", "hybrid", description="both arms fused (retrieve.fusion)"),
        Arm("hybrid-rrf", "hybrid", rrf=True, description="both arms fused by reciprocal rank fusion"),
        Arm("hybrid+links", "hybrid", links=True, description="plus the notes top passages [[link]] to"),
        Arm("hybrid+alternates", "hybrid", alternates=True, description="plus an LLM's alternate phrasings"),
        Arm("hybrid+rerank", "hybrid", rerank=True, description="plus a cross-encoder reranker"),
    )
}


@dataclass(frozen=True)
class ChunkHit:
    """A ranked chunk: its note's path, and the pages it comes from (an attachment's; none for a note's)."""

    path: str
    pages: tuple[int, ...] = ()


@dataclass(frozen=True)
class Rankings:
    """One question's ranking under one arm: its notes, and its pages (`page_unit`s), best first."""

    notes: list[str]
    pages: list[str]


class ArmUnavailable(Exception):
    """The arm cannot run here; the message says why."""


class ChunkRanker(Protocol):
    """Retrieval's ranking over one index, as the evaluation reads it."""

    # The path of every note in the index.
    notes: Collection[str]

    async def rank_chunks(self, question: Question, arm: Arm, depth: int) -> list[ChunkHit]:
        """The first `depth` chunks ranked for `question` under `arm`, best first (a note once for each of its
        chunks). Raises ArmUnavailable when a stage the arm needs did not run."""
        ...


async def rank(ranker: ChunkRanker, question: Question, arm: Arm, depth: int = DEPTH) -> Rankings:
    """The top `depth` note paths for `question` under `arm`, best first, and the pages its chunks come from in the
    same order. Raises ArmUnavailable when a stage the arm needs did not run."""
    notes: dict[str, None] = {}
    pages: dict[str, None] = {}
    for hit in await ranker.rank_chunks(question, arm, depth * CHUNKS_PER_NOTE):
        for page in hit.pages:
            pages.setdefault(page_unit(hit.path, page), None)
        if len(notes) < depth:
            notes.setdefault(hit.path, None)
    return Rankings(list(notes), list(pages))
