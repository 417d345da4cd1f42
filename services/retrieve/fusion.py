"""Reciprocal rank fusion, written once: the fused score the SQL statements compute for their two arms, and the
fusion across queries (the standalone query and its alternates) done here.

Within one query the two arms are fused in SQL, by the expression `rrf_sql` renders; `fuse_queries` fuses the
per-query rankings, so a chunk that several phrasings find rises. RRF needs only ranks, which is why scores of
different arms or queries never have to be compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

# Reciprocal rank fusion constant, as in the design record (and Cormack et al.): damps the head of each ranking.
RRF_K = 60


def rrf_sql(*ranks: str) -> str:
    """The SQL expression of a row's fused score: the sum over the arms of 1 / (RRF_K + its rank there), where
    `ranks` are SQL expressions for the row's rank in each arm, NULL when that arm did not find it (it adds 0)."""
    return " + ".join(f"coalesce(1.0 / ({RRF_K} + {rank}), 0)" for rank in ranks)


def reciprocal_rank(rank: int, k: int = RRF_K) -> float:
    """What one ranking adds to the fused score of the item it ranks `rank` (1-based)."""
    return 1.0 / (k + rank)


@dataclass(frozen=True)
class Candidate:
    """A chunk as one query's hybrid statement ranked it: its rank in each arm (None where that arm did not find
    it) and the two fused."""

    chunk_id: int
    file_id: int
    chunk_index: int
    lexical_rank: int | None
    vector_rank: int | None
    fused: float


@dataclass(frozen=True)
class Fused:
    """A chunk after fusion across queries: its best arm ranks over all queries and its summed RRF score."""

    candidate: Candidate
    score: float


def fuse_queries(rankings: Sequence[Sequence[Candidate]], k: int = RRF_K) -> list[Fused]:
    """One ranking from several, by RRF over each ranking's order; ties keep the earlier query's order."""
    if len(rankings) == 1:
        return [Fused(candidate, candidate.fused) for candidate in rankings[0]]
    scores: dict[int, float] = {}
    best: dict[int, Candidate] = {}
    first_seen: dict[int, tuple[int, int]] = {}
    for query_number, ranking in enumerate(rankings):
        for rank, candidate in enumerate(ranking, start=1):
            chunk = candidate.chunk_id
            scores[chunk] = scores.get(chunk, 0.0) + reciprocal_rank(rank, k)
            first_seen.setdefault(chunk, (query_number, rank))
            if chunk in best:
                known = best[chunk]
                candidate = replace(
                    known,
                    lexical_rank=_better(known.lexical_rank, candidate.lexical_rank),
                    vector_rank=_better(known.vector_rank, candidate.vector_rank),
                )
            best[chunk] = candidate
    order = sorted(scores, key=lambda chunk: (-scores[chunk], first_seen[chunk]))
    return [Fused(best[chunk], scores[chunk]) for chunk in order]


def _better(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)
