"""Measuring retrieval: `eval`, on a vault's own questions or a BEIR benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from secondbrain.cli.app import VaultOption, config_with, run


def evaluate(
    qa: Annotated[
        Path | None,
        typer.Option(
            "--qa",
            help="A question file: JSON lines of {id, question, expected (note paths, best first), history?, kind?, "
            "answer_hint?}. "
            "Default: .secondbrain/eval.jsonl in the vault.",
            show_default=False,
        ),
    ] = None,
    vault: VaultOption = None,
    beir: Annotated[
        Path | None,
        typer.Option(
            "--beir",
            help="A BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/). Indexed once into a database of its "
            "own, reused on the next run.",
            show_default=False,
        ),
    ] = None,
    split: Annotated[str, typer.Option(help="The BEIR qrels split.")] = "test",
    arm: Annotated[
        list[str] | None,
        typer.Option(
            "--arm",
            help="Run only this arm (repeatable): lexical, vector, hybrid, hybrid-rrf (fused by reciprocal rank), "
            "hybrid+links, hybrid+alternates, hybrid+rerank.",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.", min=1, show_default=False)] = None,
    answers: Annotated[
        bool,
        typer.Option(
            "--answers",
            help="Also ask each question through the chat service (its configured provider; the history replayed) "
            "and measure the answers: the share citing an expected note, citing only expected notes, and containing "
            "the question's answer_hint.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print every figure as JSON, keyed by arm and metric.")] = (
        False
    ),
) -> None:
    """Measure retrieval: rank each question's notes with each arm and score them (nDCG@10, Recall@1/5/10/100,
    MRR@10) with ir-measures.

    With --qa (or the vault's .secondbrain/eval.jsonl) it indexes the vault first (only what changed), reports per
    question kind, and lists the questions hybrid missed with what came instead. With --beir it runs a BEIR
    benchmark. Arms that need an LLM (alternates) or a reranker endpoint are skipped with the reason when absent.
    With --answers it measures the answers too, not only what retrieval found.
    """
    from secondbrain.cli.eval_services import run_eval
    from secondbrain.evaluation.ranking import ARMS

    run(
        run_eval(
            config_with(vault=vault),
            qa=qa,
            vault=vault,
            beir=beir,
            split=split,
            arms=arm or list(ARMS),
            limit=limit,
            as_json=as_json,
            answers=answers,
        )
    )
