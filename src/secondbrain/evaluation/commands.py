"""`secondbrain eval` from a terminal: progress on stderr, then a table per arm, or every figure as JSON."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from secondbrain.config import Config
from secondbrain.db import Database
from secondbrain.db.database import with_database
from secondbrain.errors import InvalidInput
from secondbrain.evaluation.answers import AnswerScores, evaluate_answers
from secondbrain.evaluation.metrics import MEASURES
from secondbrain.evaluation.questions import DEFAULT_QA_FILE, load_beir, load_qa
from secondbrain.evaluation.ranking import ARMS
from secondbrain.evaluation.run import (
    Report,
    beir_config,
    ensure_database,
    eval_database_name,
    evaluate,
    write_corpus,
)
from secondbrain.evaluation.services import EvalServices
from secondbrain.wording import counted

# Published nDCG@10 on SciFact (test split), for the table beside ours.
PUBLISHED_SCIFACT = [
    ("BM25 (BEIR paper)", 0.665),
    ("BM25 (Anserini, flat)", 0.679),
    ("all-MiniLM-L6-v2 (MTEB)", 0.645),
    ("multilingual-e5-large-instruct (MTEB)", 0.716),
    ("RRF of BM25 and BGE-base (castorini/quackir, DuckDB)", 0.744),
    ("RRF of BM25 and BGE-base (quackir, PostgreSQL)", 0.680),
]


async def run_eval(
    config: Config,
    *,
    services: EvalServices,
    qa: Path | None,
    vault: Path | None,
    beir: Path | None,
    split: str,
    arms: list[str],
    limit: int | None,
    as_json: bool,
    answers: bool = False,
) -> Report:
    unknown = [name for name in arms if name not in ARMS]
    if answers and beir is not None:
        raise InvalidInput("--answers measures the answers to a vault's own questions (--qa); BEIR has no answers")
    if unknown:
        raise InvalidInput(f"unknown arm {unknown[0]!r}; the arms are {', '.join(ARMS)}")
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        tasks: dict[str, int] = {}

        def progress(arm: str, done: int, total: int) -> None:
            if arm not in tasks:
                tasks[arm] = bar.add_task(arm, total=total)
            bar.update(tasks[arm], completed=done)

        if beir is not None:
            report = await _beir(services, config, beir, split, arms, limit, console, progress)
        else:
            report = await _qa(services, config, qa, vault, arms, limit, console, progress, answers)
    if as_json:
        print(json.dumps(as_dict(report), indent=2))
    else:
        show(report, Console())
    return report


async def _qa(services, config, qa, vault, arms, limit, console, progress, answers) -> Report:  # noqa: ANN001
    root = vault or config.settings.vault
    if qa is None:
        if root is None:
            raise InvalidInput("which questions? Give --qa FILE, or --vault PATH with .secondbrain/eval.jsonl in it")
        qa = root / DEFAULT_QA_FILE
    questions = load_qa(qa)
    if limit:
        questions.questions = questions.questions[:limit]
    if root is not None:
        console.print(f"[dim]Indexing {root} first (only what changed).[/dim]")
        await services.sync(config, root.resolve())
    db = await Database.open(config.settings)
    try:
        report = await evaluate(await services.open_ranker(config, db), questions, arms, progress)
    finally:
        await db.close()
    if answers:
        async with services.open_answerer(config) as (answerer, provider):
            report.answers = await evaluate_answers(answerer, questions, provider, progress)
    return report


async def _beir(services, config, directory, split, arms, limit, console, progress) -> Report:  # noqa: ANN001
    dataset = load_beir(directory, split)
    if limit:
        dataset.questions.questions = dataset.questions.questions[:limit]
    name = eval_database_name(dataset.name)
    vault = config.settings.data_dir / "eval" / dataset.name / "vault"
    written = write_corpus(dataset, vault)
    console.print(
        f"[dim]{dataset.name}: {counted(len(dataset.corpus), 'document')} ({written} written to {vault}), "
        f"{counted(len(dataset.questions.questions), split + ' query', split + ' queries')}; "
        f"index in the database {name}.[/dim]"
    )
    # Holding the configured database keeps an embedded server up while the benchmark's database is used.
    main = await Database.open(config.settings)
    try:
        await ensure_database(main.dsn, name, config.settings.db_connect_timeout_seconds)
        eval_config = beir_config(config, with_database(main.dsn, name), vault)
        await services.sync_here(eval_config, vault)
        db = await Database.open(eval_config.settings)
        try:
            report = await evaluate(await services.open_ranker(eval_config, db), dataset.questions, arms, progress)
        finally:
            await db.close()
    finally:
        await main.close()
    if dataset.name.lower() == "scifact" and split == "test":
        report.notes.append(
            "published nDCG@10 on SciFact test: " + "; ".join(f"{who} {value:.3f}" for who, value in PUBLISHED_SCIFACT)
        )
    return report


def as_dict(report: Report) -> dict:
    """Every figure, keyed by arm and metric; `per_question` has each question's, for paired comparisons of arms."""
    return {
        "dataset": report.dataset,
        "questions": report.questions,
        "kinds": report.kinds,
        "arms": {arm.name: arm.overall for arm in report.arms if not arm.unavailable},
        "per_kind": {arm.name: arm.per_kind for arm in report.arms if not arm.unavailable},
        "types": report.types,
        "per_type": {arm.name: arm.per_type for arm in report.arms if not arm.unavailable},
        "page_recall@5": {
            arm.name: arm.page_recall for arm in report.arms if not arm.unavailable and arm.page_recall is not None
        },
        "unavailable": {arm.name: arm.unavailable for arm in report.arms if arm.unavailable},
        "seconds": {arm.name: round(arm.seconds, 2) for arm in report.arms if not arm.unavailable},
        "misses": {arm.name: [asdict(miss) for miss in arm.misses] for arm in report.arms if not arm.unavailable},
        "per_question": {arm.name: arm.per_question for arm in report.arms if not arm.unavailable},
        "notes": report.notes,
        **({"answers": _answers_dict(report)} if report.answers is not None else {}),
    }


def _answers_dict(report: Report) -> dict:
    assert report.answers is not None
    return {
        "provider": report.answers.provider,
        "overall": asdict(report.answers.overall),
        "per_kind": {kind: asdict(scores) for kind, scores in report.answers.per_kind.items()},
        "misses": [asdict(miss) for miss in report.answers.misses],
        "seconds": round(report.answers.seconds, 2),
    }


def _breakdown(report: Report, title: str, groups: dict[str, int], field: str, measure: str) -> Table:
    """Each arm's recall@5 and `measure` per group of questions (`field` of its result: per_kind or per_type)."""
    table = Table(title=title, title_justify="left")
    table.add_column("arm")
    for group, count in groups.items():
        table.add_column(f"{group} ({count})", justify="right")
    for arm in report.arms:
        if not arm.unavailable:
            figures = getattr(arm, field)
            table.add_row(arm.name, *(f"{figures[g]['recall@5']:.2f} / {figures[g][measure]:.2f}" for g in groups))
    return table


def show(report: Report, console: Console) -> None:
    table = Table(title=f"{report.dataset}: {counted(report.questions, 'question')}", title_justify="left")
    table.add_column("arm")
    for name in MEASURES:
        table.add_column(name, justify="right")
    for arm in report.arms:
        if arm.unavailable:
            table.add_row(arm.name, "[dim]skipped[/dim]", *[""] * (len(MEASURES) - 1))
        else:
            table.add_row(arm.name, *(f"{arm.overall[name]:.3f}" for name in MEASURES))
    console.print(table)
    for arm in report.arms:
        if arm.unavailable:
            console.print(f"[dim]{arm.name} skipped: {arm.unavailable}[/dim]")
    if len(report.kinds) > 1:
        console.print(_breakdown(report, "by kind (recall@5 / mrr@10)", report.kinds, "per_kind", "mrr@10"))
    if len(report.types) > 1:
        console.print(_breakdown(report, "by type of file (recall@5 / ndcg@10)", report.types, "per_type", "ndcg@10"))
    if report.paged:
        scored = [f"{arm.name} {arm.page_recall:.3f}" for arm in report.arms if arm.page_recall is not None]
        console.print(
            f"page-level recall@5 ({counted(report.paged, 'question')} naming pages; a hit needs the right page): "
            + ", ".join(scored)
        )
    best = next((arm for arm in report.arms if arm.name == "hybrid" and not arm.unavailable), None)
    if best is not None and best.misses and report.questions <= 200:
        console.print("[bold]Missed by hybrid[/bold] (no expected note in the first 5):")
        for miss in best.misses:
            console.print(f"  {miss.id}: {miss.question}")
            console.print(f"    expected {', '.join(miss.expected)}; got {', '.join(miss.instead) or 'nothing'}")
    if report.answers is not None:
        _show_answers(report, console)
    for note in report.notes:
        console.print(f"[dim]{note}[/dim]")


def _show_answers(report: Report, console: Console) -> None:
    answers = report.answers
    assert answers is not None
    table = Table(
        title=f"answers by {answers.provider}: shares that cite an expected note, cite only expected notes, and "
        "contain the question's hint",
        title_justify="left",
    )
    for column in ("questions", "cite expected", "only expected", "hint"):
        table.add_column(column, justify="left" if column == "questions" else "right")

    def row(label: str, scores: AnswerScores) -> list[str]:
        hint = f"{scores.contains_hint:.2f} of {scores.hinted}" if scores.hinted else "-"
        return [f"{label} ({scores.questions})", f"{scores.cites_expected:.2f}", f"{scores.only_expected:.2f}", hint]

    table.add_row(*row("all", answers.overall))
    if len(answers.per_kind) > 1:
        for kind, scores in answers.per_kind.items():
            table.add_row(*row(kind, scores))
    console.print(table)
    if answers.overall.failed:
        failed = answers.overall.failed
        console.print(f"[red]{counted(failed, 'question')} got no answer[/red] (see the misses)")
    if answers.misses and len(answers.misses) <= 50:
        console.print("[bold]Answers that missed[/bold] (no expected note cited, or the hint absent):")
        for miss in answers.misses:
            console.print(f"  {miss.id}: {miss.question}")
            hint = f"; hint {miss.hint!r}" if miss.hint else ""
            console.print(f"    expected {', '.join(miss.expected)}; cited {', '.join(miss.cited) or 'nothing'}{hint}")
            console.print(f"    [dim]{' '.join(miss.answer.split())[:200]}[/dim]")
