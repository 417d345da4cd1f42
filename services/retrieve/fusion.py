"""Fusion, written once: how one query's two arms are fused (in SQL, by the expression `Fusion.sql` renders), and
the fusion across queries (the standalone query, its alternates, a follow-up with its history) done here.

Within one query, a chat turn's chunks are fused by a weighted sum of the arms' normalised scores (`weighted`, the
default): the cosine similarity, and the BM25 score divided by the most the query's terms could score. Both scores
are known for every candidate either arm found, so a chunk that one arm ranked just outside its top k still counts
there. Unlike reciprocal rank fusion (`rrf`, the other choice), a weak arm adds little: when no chunk shares more
than a common word with the question, its lexical ranking is noise, and RRF gives noise the same say as a good
ranking. (Bruch, Gai and Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS 2023, found the
same on BEIR; the weight was chosen on SciFact's train split and the vaults' own questions: docs/benchmarks.md,
retrieval tuning log.) The note search box fuses notes by RRF.

When both arms ran, two more kinds of evidence join a chunk's own (`Fusion.hybrid_sql`):
- its note's: the best cosine similarity and the best BM25 share among the note's candidates, fused the same way. A
  note whose one chunk matches the question's words and another its meaning is found by both arms, though no single
  chunk is; passages stay chunks, ranked within the note by their own evidence.
- the question's code as written (`secondbrain.retrieve.verbatim`): `pub(crate)` or `Ctrl+Shift+F` in a chunk is
  evidence that "pub" and "crate" somewhere in it are not, and that the full-text parser cannot keep.
Each arm alone is left as it is: it is the baseline hybrid is measured against.

Across queries, rankings are fused by RRF (`fuse_queries`), so a chunk that several phrasings find rises: the
queries' scores are not comparable, their ranks are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

# Reciprocal rank fusion constant, as in the design record (and Cormack et al.): damps the head of each ranking.
RRF_K = 60
# The vector arm's share of the weighted fusion (the lexical arm has the rest). Chosen on the mean nDCG@10 of SciFact
# train and the three vaults' own question sets over 0.40-0.75 in steps of 0.05; 0.55-0.70 is a plateau.
VECTOR_WEIGHT = 0.6

# In a hybrid ranking, a chunk's own score and its note's (the note's best cosine and best BM25 share, fused the same
# way) are averaged with this weight on the note's, and the share of the question's code tokens it contains verbatim
# is added times VERBATIM_WEIGHT. Chosen on our own question sets and SciFact's train split (note weight 0.5 and 1.0
# alike; code 0.1 best on SciFact train, 0.2-0.3 on Rust by Example's own set), then run once on the blind sets:
# docs/benchmarks.md, retrieval tuning log, "A note's evidence, and code as written".
NOTE_WEIGHT = 0.5
VERBATIM_WEIGHT = 0.1

FusionKind = Literal["weighted", "rrf"]


@dataclass(frozen=True)
class Fusion:
    """How one query's two arms become one score: `weighted` (the default) or `rrf`."""

    kind: FusionKind = "weighted"
    vector_weight: float = VECTOR_WEIGHT

    def sql(self, *, lexical_rank: str, vector_rank: str, similarity: str, lexical_share: str) -> str:
        """The SQL expression of a candidate's own score from its two arms. The arguments are SQL expressions: its
        rank in each arm (NULL outside that arm's top k), its cosine similarity (NULL without a vector arm) and its
        BM25 score as a share of the most the query could score (0 without a lexical arm)."""
        if self.kind == "rrf":
            return rrf_sql(lexical_rank, vector_rank)
        return self._weighted(f"coalesce({similarity}, 0)", lexical_share)

    def hybrid_sql(self, *, own: str, note_similarity: str, note_lexical_share: str, verbatim_share: str) -> str:
        """The SQL expression of a candidate's fused score when both arms ran: its own score (`sql`) with its note's
        evidence and the question's code it contains verbatim (see the module's docstring). The arguments are SQL
        expressions: the candidate's own score, the best cosine similarity and the best BM25 share among its note's
        candidates, and the share of the question's code tokens it contains."""
        if self.kind == "rrf":
            return own
        note = f"({self._weighted(note_similarity, note_lexical_share)})"
        return f"({own} + {NOTE_WEIGHT} * {note}) / {1 + NOTE_WEIGHT} + {VERBATIM_WEIGHT} * {verbatim_share}"

    def _weighted(self, similarity: str, lexical_share: str) -> str:
        """The weighted sum of a similarity and a BM25 share (SQL expressions), a chunk's or its note's alike."""
        return f"{self.vector_weight} * {similarity} + {1 - self.vector_weight} * {lexical_share}"


DEFAULT_FUSION = Fusion()


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
    # The evidence it was fused from: its BM25 as a share of the most the query could score (0 with no query word),
    # and its cosine similarity to the query (None without a vector arm).
    lexical_share: float = 0.0
    similarity: float | None = None


@dataclass(frozen=True)
class Fused:
    """A chunk after fusion across queries: its best arm ranks over all queries and its summed RRF score (or, from
    one query, the score its statement fused)."""

    candidate: Candidate
    score: float


def fuse_queries(rankings: Sequence[Sequence[Candidate]], k: int = RRF_K) -> list[Fused]:
    """One ranking from several, by RRF over each ranking's order; ties keep the earlier query's order.

    A chunk scores in each ranking at its own rank or, where that query found other chunks of its note but not this
    one, at its note's best rank there: the query found the note, which is evidence for the chunk too. (A follow-up
    searched as typed and again with its history often finds the right note through different chunks. Counting the
    note lifted the Obsidian Help questions' hybrid nDCG@10 0.859 -> 0.868 and changed no other set's: the
    retrieval tuning log in docs/benchmarks.md.)"""
    if len(rankings) == 1:
        return [Fused(candidate, candidate.fused) for candidate in rankings[0]]
    best: dict[int, Candidate] = {}
    first_seen: dict[int, tuple[int, int]] = {}
    for query_number, ranking in enumerate(rankings):
        for rank, candidate in enumerate(ranking, start=1):
            chunk = candidate.chunk_id
            first_seen.setdefault(chunk, (query_number, rank))
            if chunk in best:
                known = best[chunk]
                candidate = replace(
                    known,
                    lexical_rank=_better(known.lexical_rank, candidate.lexical_rank),
                    vector_rank=_better(known.vector_rank, candidate.vector_rank),
                )
            best[chunk] = candidate
    scores = dict.fromkeys(best, 0.0)
    for ranking in rankings:
        ranks = {candidate.chunk_id: rank for rank, candidate in enumerate(ranking, start=1)}
        note_ranks: dict[int, int] = {}
        for rank, candidate in enumerate(ranking, start=1):
            note_ranks.setdefault(candidate.file_id, rank)
        for chunk, candidate in best.items():
            rank = ranks.get(chunk) or note_ranks.get(candidate.file_id)
            if rank is not None:
                scores[chunk] += reciprocal_rank(rank, k)
    order = sorted(scores, key=lambda chunk: (-scores[chunk], first_seen[chunk]))
    return [Fused(best[chunk], scores[chunk]) for chunk in order]


def _better(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)
