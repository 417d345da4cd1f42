"""Retrieval quality on vaults' own questions: the demo vault (demo/vault/.secondbrain/eval.jsonl), Obsidian Help
(../shared/data/vaults/obsidian-help, with tests/data/obsidian-help-eval.jsonl) and Rust by Example
(../shared/data/vaults/rust-by-example, with tests/data/rust-by-example-eval.jsonl), per arm and kind, beside the peer
pipelines of bench/peers.py scored by the same code, written to docs/benchmarks.md. Local default embedder; no LLM,
no reranker. Uses its own data directory per vault."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from bench.peers import peer_arms
from bench.report import table, write_section
from secondbrain.cli.eval_services import run_eval
from secondbrain.config import load_config
from secondbrain.evaluation.questions import load_qa
from secondbrain.evaluation.run import Report

ROOT = Path(__file__).resolve().parents[1]
VAULTS = [
    ("demo vault", ROOT / "demo" / "vault", ROOT / "demo" / "vault" / ".secondbrain" / "eval.jsonl"),
    (
        "Obsidian Help",
        ROOT.parent / "shared" / "data" / "vaults" / "obsidian-help",
        ROOT / "tests" / "data" / "obsidian-help-eval.jsonl",
    ),
    (
        "Rust by Example",
        ROOT.parent / "shared" / "data" / "vaults" / "rust-by-example",
        ROOT / "tests" / "data" / "rust-by-example-eval.jsonl",
    ),
]
DATA_DIR = Path.home() / ".cache" / "secondbrain-bench"


async def measure(name: str, vault: Path, questions: Path) -> Report:
    os.environ.pop("DATABASE_URL", None)
    os.environ["SECONDBRAIN_DATA_DIR"] = str(DATA_DIR / name.replace(" ", "-").lower())
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
    """How far hybrid is ahead of the best peer arm and of our best single arm (issue 19's bar: 0.03 and 0)."""
    ndcg = {arm.name: arm.overall["ndcg@10"] for arm in report.arms if not arm.unavailable}
    peers = {name: value for name, value in ndcg.items() if name.startswith("peer:")}
    best_peer = max(peers, key=peers.__getitem__)
    best_single = max(("lexical", "vector"), key=ndcg.__getitem__)
    return (
        f"hybrid nDCG@10 {ndcg['hybrid']:.3f}: {ndcg['hybrid'] - peers[best_peer]:+.3f} against the best peer arm "
        f"({best_peer}, {peers[best_peer]:.3f}), {ndcg['hybrid'] - ndcg[best_single]:+.3f} against our best single "
        f"arm ({best_single}, {ndcg[best_single]:.3f})."
    )


async def main() -> None:
    parts = [
        "Each vault's own questions (`expected` notes, the first the best), ranked per arm, scored with "
        "ir-measures. Recall@5 / MRR@10 per kind of question; `Missed by hybrid` lists what hybrid did not rank in "
        "its top five. "
        "The `peer:` rows are bench/peers.py: simple pipelines a user could script (BM25 + MiniLM over word windows "
        "fused by RRF; txtai's hybrid search at its defaults), over the vault's files, each also with a follow-up's "
        "earlier user turns prepended.",
        "",
    ]
    for name, vault, questions in VAULTS:
        if not vault.is_dir():
            parts.append(f"{name}: skipped, {vault} is not here.")
            continue
        report = await measure(name, vault, questions)
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
    write_section("vault-questions", "Retrieval quality: vaults' own questions", "\n".join(parts))


if __name__ == "__main__":
    asyncio.run(main())
