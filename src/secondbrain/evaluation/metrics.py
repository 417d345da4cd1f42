"""Scoring rankings with ir-measures (pytrec_eval underneath): the field's own implementations, not ours.

Every question counts: one whose arm returned nothing scores zero rather than dropping out of the mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import ir_measures
import numpy as np
from ir_measures import RR, R, nDCG

from secondbrain.evaluation.questions import Question

MEASURES = {
    "ndcg@10": nDCG @ 10,
    "recall@1": R @ 1,
    "recall@5": R @ 5,
    "recall@10": R @ 10,
    "recall@100": R @ 100,
    "mrr@10": RR @ 10,
}
# A question "missed" when none of its notes is in this many of the arm's first.
MISS_DEPTH = 5


def per_question(questions: Sequence[Question], rankings: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """Each question's value of every measure, zeros where the ranking found nothing relevant."""
    qrels = [ir_measures.Qrel(q.id, path, grade) for q in questions for path, grade in q.relevant.items()]
    run = [
        ir_measures.ScoredDoc(qid, path, float(len(ranked) - position))
        for qid, ranked in rankings.items()
        for position, path in enumerate(ranked)
    ]
    values = {q.id: dict.fromkeys(MEASURES, 0.0) for q in questions}
    names = {measure: name for name, measure in MEASURES.items()}
    for metric in ir_measures.iter_calc(list(MEASURES.values()), qrels, run):
        values[metric.query_id][names[metric.measure]] = float(metric.value)
    return values


def page_recall(questions: Sequence[Question], page_rankings: Mapping[str, Sequence[str]], depth: int = 5) -> float:
    """The mean recall@`depth` of the questions that name their pages, over pages (`Question.page_units`, ranked as
    `page_rankings` has them): a hit needs the right page of the right file, not only the file."""
    paged = [q for q in questions if q.pages]
    if not paged:
        return 0.0
    qrels = [ir_measures.Qrel(q.id, unit, 1) for q in paged for unit in q.page_units]
    run = [
        ir_measures.ScoredDoc(q.id, unit, float(len(page_rankings[q.id]) - position))
        for q in paged
        for position, unit in enumerate(page_rankings.get(q.id, []))
    ]
    found = {metric.query_id: float(metric.value) for metric in ir_measures.iter_calc([R @ depth], qrels, run)}
    return sum(found.get(q.id, 0.0) for q in paged) / len(paged)


def mean(values: Mapping[str, Mapping[str, float]], ids: Sequence[str]) -> dict[str, float]:
    if not ids:
        return dict.fromkeys(MEASURES, 0.0)
    return {name: sum(values[i][name] for i in ids) / len(ids) for name in MEASURES}


def missed(question: Question, ranked: Sequence[str]) -> bool:
    return not set(ranked[:MISS_DEPTH]) & set(question.relevant)


# Resamples of the paired bootstrap, and its seed: the same figures give the same interval on every run.
BOOTSTRAP_SAMPLES = 10_000
BOOTSTRAP_SEED = 31


@dataclass(frozen=True)
class Difference:
    """How far one arm's mean is above another's over the same questions, with a 95% interval."""

    mean: float
    low: float
    high: float

    @property
    def clear(self) -> bool:
        """Whether the interval excludes zero: a lead inside the noise of a small set is not a win."""
        return self.low > 0 or self.high < 0

    def __str__(self) -> str:
        return f"{self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def paired_bootstrap(a: Mapping[str, float], b: Mapping[str, float]) -> Difference:
    """The mean of `a` minus `b` over the questions both scored, with a 95% percentile interval from resampling the
    questions (paired: a resample draws a question's two scores together, so what varies with the question cancels
    out)."""
    ids = sorted(a.keys() & b.keys())
    if not ids:
        raise ValueError("the two arms share no question")
    differences = np.array([a[i] - b[i] for i in ids])
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    draws = rng.integers(0, len(ids), size=(BOOTSTRAP_SAMPLES, len(ids)))
    means = differences[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Difference(float(differences.mean()), float(low), float(high))
