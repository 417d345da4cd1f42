"""Retrieval quality on vaults' own questions: the demo vault (demo/vault/.secondbrain/eval.jsonl), Obsidian Help
(../shared/data/vaults/obsidian-help, with tests/data/obsidian-help-eval.jsonl) and Rust by Example
(../shared/data/vaults/rust-by-example, with tests/data/rust-by-example-eval.jsonl), the blind sets of the two real
vaults (tests/data/*-blind.jsonl: written from the notes alone and frozen before any comparison, the test sets that
no variant is chosen on) and their blind follow-up sets (tests/data/*-followups-dev.jsonl, written the same way, to
choose on), per arm and kind, beside the peer pipelines of bench/peers.py scored by the same code,
written to docs/benchmarks.md. Each lead comes with a paired bootstrap 95% interval over the questions. Local default
embedder; no LLM, no reranker. Uses its own data directory per vault."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from bench.peers import peer_arms
from bench.report import table, write_section
from secondbrain.cli.eval_services import run_eval
from secondbrain.config import load_config
from secondbrain.evaluation.metrics import paired_bootstrap
from secondbrain.evaluation.questions import load_qa
from secondbrain.evaluation.run import ArmResult, Report

ROOT = Path(__file__).resolve().parents[1]
SHARED_VAULTS = ROOT.parent / "shared" / "data" / "vaults"
QUESTIONS = ROOT / "tests" / "data"
# (name, the data directory of its index, the vault, its questions): a vault's blind set reuses its index.
VAULTS = [
    ("demo vault", "demo-vault", ROOT / "demo" / "vault", ROOT / "demo" / "vault" / ".secondbrain" / "eval.jsonl"),
    ("Obsidian Help", "obsidian-help", SHARED_VAULTS / "obsidian-help", QUESTIONS / "obsidian-help-eval.jsonl"),
    (
        "Obsidian Help, blind",
        "obsidian-help",
        SHARED_VAULTS / "obsidian-help",
        QUESTIONS / "obsidian-help-blind.jsonl",
    ),
    ("Rust by Example", "rust-by-example", SHARED_VAULTS / "rust-by-example", QUESTIONS / "rust-by-example-eval.jsonl"),
    (
        "Rust by Example, blind",
        "rust-by-example",
        SHARED_VAULTS / "rust-by-example",
        QUESTIONS / "rust-by-example-blind.jsonl",
    ),
    (
        "Obsidian Help, follow-ups (blind, dev)",
        "obsidian-help",
        SHARED_VAULTS / "obsidian-help",
        QUESTIONS / "obsidian-help-followups-dev.jsonl",
    ),
    (
        "Rust by Example, follow-ups (blind, dev)",
        "rust-by-example",
        SHARED_VAULTS / "rust-by-example",
        QUESTIONS / "rust-by-example-followups-dev.jsonl",
    ),
]
DATA_DIR = Path.home() / ".cache" / "secondbrain-bench"


async def measure(data: str, vault: Path, questions: Path) -> Report:
    os.environ.pop("DATABASE_URL", None)
    os.environ["SECONDBRAIN_DATA_DIR"] = str(DATA_DIR / data)
    os.environ["SECONDBRAIN_VAULT"] = str(vault)
    return await run_eval(
        load_config(),
        qa=questions,
        vault=vault,
        beir=None,
        split="test",
        arms=["lexical", "vector", "hybrid", "hybrid-rrf"],
        limit=None,
        as_json=False,
    )


def margin(report: Report) -> str:
    """How far hybrid is ahead of the best peer arm and of our best single arm (issue 31's bar: 0.03 and 0), each
    with a paired bootstrap 95% interval over the questions, and the follow-ups' recall@5 (bar 0.85)."""
    arms = {arm.name: arm for arm in report.arms if not arm.unavailable}
    ndcg = {name: arm.overall["ndcg@10"] for name, arm in arms.items()}
    best_peer = max((name for name in ndcg if name.startswith("peer:")), key=ndcg.__getitem__)
    best_single = max(("lexical", "vector"), key=ndcg.__getitem__)
    hybrid = arms["hybrid"]
    follow_ups = hybrid.per_kind.get("follow-up")
    return (
        f"hybrid nDCG@10 {ndcg['hybrid']:.3f}: {lead(hybrid, arms[best_peer])} against the best peer arm "
        f"({best_peer}, {ndcg[best_peer]:.3f}), {lead(hybrid, arms[best_single])} against our best single arm "
        f"({best_single}, {ndcg[best_single]:.3f})"
        + (f"; follow-ups recall@5 {follow_ups['recall@5']:.2f}." if follow_ups else ".")
    )


def lead(ours: ArmResult, other: ArmResult) -> str:
    """nDCG@10 of `ours` minus `other`, with its paired bootstrap 95% interval; bold when the interval excludes 0."""
    difference = paired_bootstrap(
        {qid: values["ndcg@10"] for qid, values in ours.per_question.items()},
        {qid: values["ndcg@10"] for qid, values in other.per_question.items()},
    )
    return f"**{difference}**" if difference.clear else str(difference)


async def main() -> None:
    parts = [
        "Each vault's own questions (`expected` notes, the first the best), ranked per arm, scored with "
        "ir-measures. Recall@5 / MRR@10 per kind of question; `Missed by hybrid` lists what hybrid did not rank in "
        "its top five. "
        "The `peer:` rows are bench/peers.py: simple pipelines a user could script (BM25 + MiniLM over word windows "
        "fused by RRF; txtai's hybrid search at its defaults), over the vault's files, each also with a follow-up's "
        "earlier user turns prepended. Leads are nDCG@10 differences with a paired bootstrap 95% interval over the "
        "questions (10,000 resamples), in bold where the interval excludes zero. The blind sets were written from the "
        "notes alone by helpers who saw no code and no output, and committed before anything ran on them: no variant "
        "was chosen on them. The follow-up sets (30 conversations each, one or two earlier exchanges with the "
        "assistant's turns as an assistant would write them) were written the same way, blind, but are for choosing: "
        "how the earlier turns join a follow-up's query is compared on them.",
        "",
    ]
    for name, data, vault, questions in VAULTS:
        if not vault.is_dir():
            parts.append(f"{name}: skipped, {vault} is not here.")
            continue
        report = await measure(data, vault, questions)
        report.arms += peer_arms(vault, load_qa(questions))
        kinds = list(report.kinds)
        rows = []
        for arm in report.arms:
            rows.append([
                arm.name,
                f"{arm.overall['ndcg@10']:.3f}",
                f"{arm.overall['recall@5']:.3f}",
                f"{arm.overall['mrr@10']:.3f}",
                *(f"{arm.per_kind[k]['recall@5']:.2f} / {arm.per_kind[k]['mrr@10']:.2f}" for k in kinds),
            ])  # fmt: skip
        header = ["arm", "ndcg@10", "recall@5", "mrr@10", *(f"{k} ({report.kinds[k]})" for k in kinds)]
        hybrid = next(arm for arm in report.arms if arm.name == "hybrid")
        missed = "; ".join(f"{m.id} ({m.question})" for m in hybrid.misses) or "none"
        parts += [
            f"**{name}**: {report.questions} questions.",
            "",
            table(header, rows),
            "",
            margin(report),
            "",
            f"Missed by hybrid: {missed}.",
            "",
        ]
    write_section("vault-questions", "Retrieval quality: vaults' questions, our own and blind", "\n".join(parts))


if __name__ == "__main__":
    asyncio.run(main())
