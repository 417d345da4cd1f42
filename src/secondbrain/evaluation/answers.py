"""`secondbrain eval --answers`: the answers themselves measured, not only the retrieval under them.

Each question is asked through the chat service with the configured provider (its history replayed as the turns
before it), as a person asking it would be answered, and three things are counted of the answer:
- it cites a passage of an expected note (the answer rests on the right note);
- every passage it cites is of an expected note (it rests on nothing else); an answer that cites nothing has neither;
- it contains the question's `answer_hint` (the decisive words of a right answer, compared case-insensitively with
  whitespace normalised), for the questions that have one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from secondbrain.evaluation.questions import Question, QuestionSet

Progress = Callable[[str, int, int], None]
ARM = "answers"


@dataclass(frozen=True)
class Answered:
    """One answer as the measure reads it: its text and the notes of the passages it cites, in citation order; or
    why it failed."""

    text: str
    cited_notes: list[str]
    error: str = ""


class Answerer(Protocol):
    async def answer(self, question: Question) -> Answered:
        """Ask `question` (after its history) and return the answer."""
        ...


@dataclass
class AnswerScores:
    """The shares of answers that cite an expected note, cite only expected notes, and contain the hint (of the
    `hinted` questions that have one); `failed` turns count as none of these."""

    questions: int = 0
    cites_expected: float = 0.0
    only_expected: float = 0.0
    hinted: int = 0
    contains_hint: float = 0.0
    failed: int = 0


@dataclass
class AnswerMiss:
    id: str
    question: str
    expected: list[str]
    cited: list[str]
    hint: str
    answer: str


@dataclass
class AnswerReport:
    provider: str
    overall: AnswerScores
    per_kind: dict[str, AnswerScores]
    misses: list[AnswerMiss] = field(default_factory=list)
    seconds: float = 0.0


def _normalised(text: str) -> str:
    return " ".join(text.lower().split())


@dataclass(frozen=True)
class _Judged:
    kind: str
    cites_expected: bool
    only_expected: bool
    has_hint: bool
    contains_hint: bool
    failed: bool


def judge(question: Question, answered: Answered) -> _Judged:
    cited = set(answered.cited_notes)
    expected = set(question.relevant)
    hint = _normalised(question.answer_hint)
    return _Judged(
        kind=question.kind,
        cites_expected=bool(cited & expected),
        only_expected=bool(cited) and cited <= expected,
        has_hint=bool(hint),
        contains_hint=bool(hint) and hint in _normalised(answered.text),
        failed=bool(answered.error),
    )


def _scores(judged: Sequence[_Judged]) -> AnswerScores:
    count = len(judged)
    hinted = [j for j in judged if j.has_hint]
    return AnswerScores(
        questions=count,
        cites_expected=sum(j.cites_expected for j in judged) / count if count else 0.0,
        only_expected=sum(j.only_expected for j in judged) / count if count else 0.0,
        hinted=len(hinted),
        contains_hint=sum(j.contains_hint for j in hinted) / len(hinted) if hinted else 0.0,
        failed=sum(j.failed for j in judged),
    )


async def evaluate_answers(
    answerer: Answerer, questions: QuestionSet, provider: str, progress: Progress
) -> AnswerReport:
    """Ask every question, one at a time (a rate-limited or local model is not flooded), and score the answers."""
    started = time.perf_counter()
    judged: list[_Judged] = []
    misses: list[AnswerMiss] = []
    total = len(questions.questions)
    progress(ARM, 0, total)
    for done, question in enumerate(questions.questions, start=1):
        answered = await answerer.answer(question)
        verdict = judge(question, answered)
        judged.append(verdict)
        if not verdict.cites_expected or (verdict.has_hint and not verdict.contains_hint):
            misses.append(AnswerMiss(
                question.id, question.text, list(question.relevant), answered.cited_notes, question.answer_hint,
                answered.error or answered.text,
            ))  # fmt: skip
        progress(ARM, done, total)
    kinds = sorted({j.kind for j in judged})
    return AnswerReport(
        provider=provider,
        overall=_scores(judged),
        per_kind={kind: _scores([j for j in judged if j.kind == kind]) for kind in kinds},
        misses=misses,
        seconds=time.perf_counter() - started,
    )
