"""Retrieval quality under each local embedder runtime (issue 23): the same questions, an index built by each.

For each runtime (`torch`, the path before issue 23; `onnx`, the ONNX Runtime export of the same weights; and
`onnx-int8`, quantized) every dataset is indexed afresh into a data directory of that runtime's own, so the chunks'
vectors and the questions' come from the runtime measured, then ranked: BEIR SciFact test (vector and hybrid) and the
three vaults' own questions (vector and hybrid). nDCG@10 per runtime side by side, and each runtime's difference from
torch's. The bar for a runtime to replace torch: SciFact within 0.003, the vault sets within 0.005.

Run with `python -m bench.runtime_quality` (in `make bench`); it writes docs/benchmarks.md. The indexes are cached in
~/.cache/secondbrain-bench/runtimes/<runtime>/ and brought up to date on each run (nothing changes, so only the
questions are embedded again), never DATABASE_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

from bench.report import table, write_section
from bench.scifact import DEFAULT_DATA as SCIFACT
from bench.vault_questions import VAULTS
from secondbrain.cli.eval_services import run_eval
from secondbrain.config import Config, load_config
from secondbrain.evaluation.run import Report

DATA_DIR = Path.home() / ".cache" / "secondbrain-bench" / "runtimes"
RUNTIMES = ("torch", "onnx", "onnx-int8")
ARMS = ["vector", "hybrid"]
BARS = {"SciFact test": 0.003}
VAULT_BAR = 0.005


def configured(runtime: str, data_dir: Path, vault: Path | None) -> Config:
    os.environ.pop("DATABASE_URL", None)  # never write benchmark data into a real database
    os.environ["SECONDBRAIN_DATA_DIR"] = str(data_dir)
    if vault is not None:
        os.environ["SECONDBRAIN_VAULT"] = str(vault)
    config = load_config()
    embedding = config.vault.embedding.model_copy(update={"runtime": runtime})
    return Config(config.settings, config.vault.model_copy(update={"embedding": embedding}))


async def measure(runtime: str) -> dict[str, dict[str, float]]:
    """nDCG@10 per dataset and arm under `runtime`."""
    found: dict[str, dict[str, float]] = {}
    home = DATA_DIR / runtime
    reports: list[tuple[str, Report]] = []
    if SCIFACT.is_dir():
        config = configured(runtime, home / "scifact", None)
        report = await run_eval(config, qa=None, vault=None, beir=SCIFACT, split="test", arms=ARMS, limit=None,
                                as_json=False)  # fmt: skip
        reports.append(("SciFact test", report))
    for name, vault, questions in VAULTS:
        if not vault.is_dir():
            continue
        config = configured(runtime, home / name.replace(" ", "-").lower(), vault)
        report = await run_eval(config, qa=questions, vault=vault, beir=None, split="test", arms=ARMS, limit=None,
                                as_json=False)  # fmt: skip
        reports.append((name, report))
    for name, report in reports:
        found[name] = {arm.name: arm.overall["ndcg@10"] for arm in report.arms if not arm.unavailable}
    return found


def describe(results: dict[str, dict[str, dict[str, float]]]) -> str:
    runtimes = list(results)
    datasets = list(results[runtimes[0]])
    rows = []
    for dataset in datasets:
        bar = BARS.get(dataset, VAULT_BAR)
        for arm in ARMS:
            base = results["torch"][dataset][arm]
            cells = [dataset, arm]
            for runtime in runtimes:
                value = results[runtime][dataset][arm]
                cells.append(f"{value:.3f}" if runtime == "torch" else f"{value:.3f} ({value - base:+.4f})")
            cells.append(f"±{bar}")
            rows.append(cells)
    return "\n".join([
        "nDCG@10 with an index built by each runtime (each dataset indexed by the runtime measured; questions "
        "embedded by it too), no LLM, no reranker. In brackets: the difference from torch. The bar for a runtime to "
        "replace torch is the last column.",
        "",
        table(["dataset", "arm", *runtimes, "bar"], rows),
    ])  # fmt: skip


async def main(runtimes: list[str]) -> None:
    results = {runtime: await measure(runtime) for runtime in runtimes}
    body = describe(results)
    write_section("embedder-quality", "Retrieval quality under each embedder runtime", body)
    print(body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtimes", nargs="+", default=list(RUNTIMES), choices=RUNTIMES,
                        help="the runtimes to measure; torch, the baseline, first (default all three)")  # fmt: skip
    options = parser.parse_args()
    if options.runtimes[0] != "torch":
        parser.error("torch is the baseline: list it first")
    asyncio.run(main(options.runtimes))
