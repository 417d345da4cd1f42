"""`secondbrain eval`: index what is asked about, rank every question with every arm, and score the rankings.

Two sources of questions:
- a vault's own question set (`--qa`), run against the configured database after an incremental sync of the vault;
- a BEIR benchmark (`--beir`), whose corpus is written out as notes (title as the heading, text as the body) and
  indexed into a database of its own (`secondbrain_eval_<name>` on the same server), once: the next run reuses it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from secondbrain.config import Config
from secondbrain.db.database import connect
from secondbrain.errors import InvalidInput
from secondbrain.evaluation import metrics
from secondbrain.evaluation.answers import AnswerReport
from secondbrain.evaluation.questions import BeirDataset, Question, QuestionSet, note_path
from secondbrain.evaluation.ranking import ARMS, ArmUnavailable, ChunkRanker, rank
from secondbrain.file_kinds import kind_of
from secondbrain.vault_config import EmbeddingSection, VaultConfig

Progress = Callable[[str, int, int], None]


@dataclass
class Miss:
    id: str
    question: str
    expected: list[str]
    instead: list[str]


@dataclass
class ArmResult:
    name: str
    description: str
    overall: dict[str, float] = field(default_factory=dict)
    per_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    unavailable: str = ""
    misses: list[Miss] = field(default_factory=list)
    seconds: float = 0.0
    # Each question's value of every measure, by question id: for paired comparisons between arms.
    per_question: dict[str, dict[str, float]] = field(default_factory=dict)
    # By the type of file that answers it (its first expected one: note, PDF, image, canvas, ...).
    per_type: dict[str, dict[str, float]] = field(default_factory=dict)
    # Recall@5 over pages, of the questions that name their pages; None when none does.
    page_recall: float | None = None


@dataclass
class Report:
    dataset: str
    questions: int
    kinds: dict[str, int]
    arms: list[ArmResult]
    notes: list[str] = field(default_factory=list)
    # `--answers`: the answers the chat service gave, measured.
    answers: AnswerReport | None = None
    # Questions by the type of file that answers them, and how many name their pages.
    types: dict[str, int] = field(default_factory=dict)
    paged: int = 0


async def evaluate(ranker: ChunkRanker, questions: QuestionSet, arm_names: Sequence[str], progress: Progress) -> Report:
    """Rank every question with every arm in `arm_names` over the index `ranker` ranks, and score them."""
    known = set(ranker.notes)
    notes = [
        f"question {q.id}: {path} is not in the index"
        for q in questions.questions
        for path in q.relevant
        if path not in known
    ]
    if questions.ignored:
        fields = ", ".join(f"{key!r} (on {count} of the lines)" for key, count in questions.ignored.items())
        notes.insert(0, f"ignored fields the evaluation does not use: {fields}")
    results = []
    for name in arm_names:
        arm = ARMS[name]
        started = time.perf_counter()
        rankings: dict[str, list[str]] = {}
        page_rankings: dict[str, list[str]] = {}
        try:
            for done, question in enumerate(questions.questions):
                progress(name, done, len(questions.questions))
                ranked = await rank(ranker, question, arm)
                rankings[question.id], page_rankings[question.id] = ranked.notes, ranked.pages
        except ArmUnavailable as error:
            results.append(ArmResult(name, arm.description, unavailable=str(error)))
            continue
        progress(name, len(questions.questions), len(questions.questions))
        result = score_arm(name, arm.description, questions.questions, rankings, time.perf_counter() - started)
        if any(q.pages for q in questions.questions):
            result.page_recall = metrics.page_recall(questions.questions, page_rankings)
        results.append(result)
    kinds = _kinds(questions.questions)
    types = _types(questions.questions)
    return Report(
        questions.name,
        len(questions.questions),
        {k: len(ids) for k, ids in kinds.items()},
        results,
        notes,
        types={t: len(ids) for t, ids in types.items()},
        paged=sum(1 for q in questions.questions if q.pages),
    )


def score_arm(
    name: str, description: str, questions: Sequence[Question], rankings: dict[str, list[str]], seconds: float
) -> ArmResult:
    """One arm's rankings of every question, scored overall and per kind of question, with what it missed. Any
    ranker's note rankings are scored here (the benchmarks' peer pipelines too), so every row is measured alike."""
    values = metrics.per_question(questions, rankings)
    return ArmResult(
        name,
        description,
        overall=metrics.mean(values, [q.id for q in questions]),
        per_kind={kind: metrics.mean(values, ids) for kind, ids in _kinds(questions).items()},
        per_type={kind: metrics.mean(values, ids) for kind, ids in _types(questions).items()},
        misses=[_miss(q, rankings[q.id]) for q in questions if metrics.missed(q, rankings[q.id])],
        seconds=seconds,
        per_question=values,
    )


def _kinds(questions: Sequence[Question]) -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {}
    for question in questions:
        kinds.setdefault(question.kind, []).append(question.id)
    return dict(sorted(kinds.items()))


def _types(questions: Sequence[Question]) -> dict[str, list[str]]:
    """Question ids by the type of the file that best answers each (`formats.kind_of`: note, PDF, image, ...)."""
    types: dict[str, list[str]] = {}
    for question in questions:
        best = max(question.relevant, key=lambda path: question.relevant[path])
        types.setdefault(kind_of(best) or "other", []).append(question.id)
    return dict(sorted(types.items()))


def _miss(question: Question, ranked: list[str]) -> Miss:
    expected = sorted(question.relevant, key=lambda path: -question.relevant[path])
    return Miss(question.id, question.text, expected, ranked[:3])


# BEIR: the corpus as a vault, in a database of its own -------------------------------------------------------------


def eval_database_name(dataset: str) -> str:
    return "secondbrain_eval_" + re.sub(r"[^a-z0-9_]", "_", dataset.lower())


async def ensure_database(dsn: str, database: str, connect_timeout: float) -> None:
    """Create `database` on the server of `dsn` unless it exists."""
    connection = await connect(dsn, connect_timeout)
    try:
        exists = await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", database)
        if not exists:
            try:
                await connection.execute(f'CREATE DATABASE "{database}"')
            except asyncpg.InsufficientPrivilegeError:
                raise InvalidInput(
                    f"the evaluation needs a database of its own ({database}) and this user may not create one: "
                    "create it, or run the evaluation on the embedded PostgreSQL (unset DATABASE_URL)"
                ) from None
    finally:
        await connection.close()


def write_corpus(dataset: BeirDataset, vault: Path) -> int:
    """Write each document as a note, leaving files that already hold the same text untouched (so the next sync
    skips them unread); returns how many were written."""
    vault.mkdir(parents=True, exist_ok=True)
    written = 0
    for document in dataset.corpus:
        target = vault / note_path(document.id)
        title = " ".join(document.title.split()) or document.id
        text = f"# {title}\n\n{document.text.strip()}\n"
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
            written += 1
    return written


def beir_config(config: Config, dsn: str, vault: Path) -> Config:
    """The configuration for a benchmark's own database and vault: this install's settings, the default pipeline,
    with the local model run the way this install runs it (`embedding.runtime` is how, not which model)."""
    settings = config.settings.model_copy(update={"database_url": dsn, "vault": vault})
    embedding = EmbeddingSection(runtime=config.vault.embedding.runtime)
    return Config(settings=settings, vault=VaultConfig(embedding=embedding))
