"""Reciprocal rank fusion across queries (the standalone query and its alternates).

Within one query the two arms are fused in SQL; this fuses the per-query rankings, so a chunk that several
phrasings find rises. RRF needs only ranks, which is why scores of different queries never have to be compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from secondbrain.retrieve.store import RRF_K, Candidate


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
            scores[chunk] = scores.get(chunk, 0.0) + 1.0 / (k + rank)
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
