"""Scoring rankings with ir-measures (pytrec_eval underneath): the field's own implementations, not ours.

Every question counts: one whose arm returned nothing scores zero rather than dropping out of the mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import ir_measures
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


def mean(values: Mapping[str, Mapping[str, float]], ids: Sequence[str]) -> dict[str, float]:
    if not ids:
        return dict.fromkeys(MEASURES, 0.0)
    return {name: sum(values[i][name] for i in ids) / len(ids) for name in MEASURES}


def missed(question: Question, ranked: Sequence[str]) -> bool:
    return not set(ranked[:MISS_DEPTH]) & set(question.relevant)
