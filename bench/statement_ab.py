"""The hybrid statement against an earlier version of itself, interleaved on one generated index, so a change to the
statement is timed apart from this machine's drift (runs of the same code differ by a third here; rounds that
alternate the two versions on the same table do not).

    python -m bench.statement_ab --base 981ab77 --chunks 100000

The earlier `services/retrieve/store/hybrid.py` is read from git at `--base` and loaded beside today's. Each round
runs every query once with each version, in alternating order; the table reports each version's p50 and p95 over
all rounds, and the median of the rounds' ratios. The queries are bench/retrieve.py's (three to five words), each
run also with a code token added (`word(word)`), which today's statement matches verbatim. Uses its own embedded
PostgreSQL in a temporary directory, never DATABASE_URL; results go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import numpy as np

from bench.report import table, write_section
from bench.retrieve import load, percentiles
from secondbrain.config import load_config
from secondbrain.db import Database
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.store import hybrid

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 5
K = 40  # a chat turn's candidates per arm


def earlier_statement(base: str) -> ModuleType:
    """services/retrieve/store/hybrid.py as it was at `base`, as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{base}:services/retrieve/store/hybrid.py"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tempfile.NamedTemporaryFile("wb", suffix=".py", delete=False) as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location("hybrid_at_base", file.name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


async def main(base: str, chunks: int) -> None:
    earlier = earlier_statement(base)
    with tempfile.TemporaryDirectory(prefix="secondbrain-bench-") as tmp:
        os.environ.pop("DATABASE_URL", None)
        os.environ["SECONDBRAIN_DATA_DIR"] = str(Path(tmp) / "data")
        db = await Database.open(load_config().settings)
        try:
            print(f"{chunks:,} chunks: loading", flush=True)
            words = await load(db, chunks)
            rng = np.random.default_rng(5)
            vectors = [v / np.linalg.norm(v) for v in rng.standard_normal((len(words), 384)).astype(np.float32)]
            with_code = [f"{query} {query.split()[0]}({query.split()[-1]})" for query in words]
            rows = []
            for label, queries in (("words", words), ("words and a code token", with_code)):
                samples: dict[str, list[float]] = {"before": [], "after": []}
                ratios = []
                for number in range(ROUNDS + 1):
                    order = [("before", earlier), ("after", hybrid)]
                    if number % 2:
                        order.reverse()
                    medians = {}
                    for name, module in order:
                        timed = await _time(db, module, queries, vectors)
                        if number:  # the first round warms the cache
                            samples[name] += timed
                        medians[name] = statistics.median(timed)
                    if number:
                        ratios.append(medians["after"] / medians["before"])
                for name in ("before", "after"):
                    p50, p95 = percentiles(samples[name])
                    rows.append([label, name, f"{p50:.1f}", f"{p95:.1f}"])
                rows.append([label, "after / before", f"{statistics.median(ratios):.2f}x", ""])
        finally:
            await db.close()
    body = [
        f"The hybrid statement at {chunks:,} generated chunks (bench/retrieve.py's table and queries), today's against "
        f"`{base}`'s, {ROUNDS} interleaved rounds of {len(words)} queries each, k {K}; the ratio is the median of the "
        "rounds' p50 ratios.",
        "",
        table(["queries", "statement", "p50 ms", "p95 ms"], rows),
    ]
    write_section("statement-ab", "The hybrid statement against an earlier version", "\n".join(body))
    print("\n".join(body))


async def _time(db: Database, module: ModuleType, queries: list[str], vectors: list[np.ndarray]) -> list[float]:
    samples = []
    async with db.pool.acquire() as connection:
        for query, vector in zip(queries, vectors, strict=True):
            started = time.perf_counter()
            await module.hybrid_candidates(connection, query, K, Filters(), vector)
            samples.append((time.perf_counter() - started) * 1000)
    return samples


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the git revision whose statement to compare with")
    parser.add_argument("--chunks", type=int, default=100_000, help="the index size (default 100,000)")
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(arguments.base, arguments.chunks)))
