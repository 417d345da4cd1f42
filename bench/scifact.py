"""Retrieval quality on BEIR SciFact (test split), beside the published numbers and the peer pipelines, and our arms
on the train split (the split fusion and BM25 were tuned on), written to docs/benchmarks.md.

Runs `secondbrain eval --beir` in this process on the local default embedder (all-MiniLM-L6-v2), no LLM and no
reranker, so every arm that runs offline is measured. The corpus is indexed once into its own database; later runs
reuse it. Uses its own data directory (SECONDBRAIN_DATA_DIR, default ~/.cache/secondbrain-bench, with an embedded
PostgreSQL), never DATABASE_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from pathlib import Path

from bench.peers import peer_arms
from bench.report import table, write_section
from secondbrain.cli.eval_services import run_eval
from secondbrain.config import load_config
from secondbrain.evaluation.commands import PUBLISHED_SCIFACT
from secondbrain.evaluation.metrics import MEASURES
from secondbrain.evaluation.questions import load_beir
from secondbrain.evaluation.run import write_corpus

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"
DATA_DIR = Path.home() / ".cache" / "secondbrain-bench"


async def main(directory: Path) -> None:
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("SECONDBRAIN_DATA_DIR", str(DATA_DIR))
    config = load_config()
    report = await run_eval(
        config,
        qa=None,
        vault=None,
        beir=directory,
        split="test",
        arms=["lexical", "vector", "hybrid", "hybrid-rrf", "hybrid+alternates", "hybrid+rerank"],
        limit=None,
        as_json=False,
    )
    train = await run_eval(
        config,
        qa=None,
        vault=None,
        beir=directory,
        split="train",
        arms=["lexical", "vector", "hybrid", "hybrid-rrf"],
        limit=None,
        as_json=False,
    )
    # The peer pipelines read files: the same corpus written out as notes, as `eval --beir` indexes it.
    dataset = load_beir(directory, "test")
    with tempfile.TemporaryDirectory() as corpus:
        write_corpus(dataset, Path(corpus))
        peers = peer_arms(Path(corpus), dataset.questions)
    ours = [
        [f"secondbrain {arm.name}", *(f"{arm.overall[m]:.3f}" for m in MEASURES), f"{arm.seconds:.0f} s"]
        for arm in report.arms
        if not arm.unavailable
    ]
    ours += [[arm.name, *(f"{arm.overall[m]:.3f}" for m in MEASURES), f"{arm.seconds:.0f} s"] for arm in peers]
    trained = [
        [f"secondbrain {arm.name}", *(f"{arm.overall[m]:.3f}" for m in MEASURES), f"{arm.seconds:.0f} s"]
        for arm in train.arms
    ]
    skipped = [f"- {arm.name}: skipped ({arm.unavailable})" for arm in report.arms if arm.unavailable]
    body = "\n".join([
        f"BEIR SciFact, test split: {report.questions} queries over 5,183 abstracts, each indexed as a note (title as "
        "its heading). Local embedder all-MiniLM-L6-v2 (384-d), BM25 in SQL (a chunk's score plus half its section's, "
        "here the whole abstract); hybrid fuses 0.6 x cosine similarity + 0.4 x BM25 as a share of the query's best "
        "possible score, hybrid-rrf by reciprocal rank fusion (k = 60); documents ranked where their best chunk ranks. "
        "Scored with ir-measures (pytrec_eval). The `peer:` rows are bench/peers.py over the same abstracts written as "
        "files (time for all queries, after indexing).",
        "",
        table(["system", *MEASURES, "time for all queries"], ours),
        "",
        table(["published system", "ndcg@10"], [[who, f"{value:.3f}"] for who, value in PUBLISHED_SCIFACT]),
        "",
        *skipped,
        "",
        f"Train split ({train.questions} queries, the split retrieval was tuned on):",
        "",
        table(["system", *MEASURES, "time for all queries"], trained),
    ])  # fmt: skip
    write_section("scifact", "Retrieval quality: BEIR SciFact", body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory", nargs="?", type=Path, default=DEFAULT_DATA, help="the BEIR scifact folder")
    asyncio.run(main(parser.parse_args().directory))
