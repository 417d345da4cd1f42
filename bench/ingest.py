"""Ingest benchmarks: chunking throughput, full ingest with the local embedder against the embedder's raw speed
(for each runtime of the local model, side by side, each in a process and a database of its own so its memory and
its index are its own), a no-op re-sync of a 10,000-note vault, and what editing one paragraph re-embeds.

Run with `make bench` (or `python -m bench.ingest`); results go to docs/benchmarks.md. Uses its own embedded
PostgreSQL in a temporary directory, never DATABASE_URL, and reads ../shared/data/vaults/obsidian-help when present.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.report import table, write_section
from secondbrain.config import load_settings
from secondbrain.db import Database
from secondbrain.embedding import Embedder, create_embedder
from secondbrain.ingest.chunker import ChunkBudget, chunk_note
from secondbrain.ingest.events import SyncFinished
from secondbrain.ingest.note import parse_note
from secondbrain.ingest.pipeline import Ingestor
from secondbrain.vault_config import EmbeddingSection, IngestSection
from tests.environment import clean_environ
from tests.wire import OllamaServer

OBSIDIAN_HELP = Path(__file__).resolve().parents[2] / "shared" / "data" / "vaults" / "obsidian-help"
# The local model's runtimes measured side by side (embedding.runtime); the first is today's default.
RUNTIMES = ("torch", "onnx")
WORDS = [
    "vault",
    "note",
    "project",
    "decision",
    "storage",
    "vector",
    "search",
    "index",
    "query",
    "passage",
    "model",
    "embed",
    "chunk",
    "heading",
    "link",
    "tag",
    "meeting",
    "plan",
    "review",
    "budget",
    "design",
    "research",
    "reading",
    "summary",
    "idea",
    "question",
    "answer",
    "context",
    "retrieval",
    "fusion",
    "rank",
    "postgres",
    "python",
    "service",
    "stream",
    "token",
    "window",
    "overlap",
    "paragraph",
    "section",
    "folder",
    "garden",
    "daily",
    "weekly",
    "archive",
]


def generate_vault(root: Path, notes: int, seed: int = 7) -> None:
    """`notes` synthetic notes of about 2 KB: front matter, headings, paragraphs, lists, code, tables, links."""
    rng = random.Random(seed)

    def sentence() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))).capitalize() + "."

    for number in range(notes):
        folder = root / f"Area {number % 20}" / f"Project {number % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        parts = [f"---\ntags: [{rng.choice(WORDS)}, area/{number % 20}]\n---", f"# Note {number}"]
        for section in range(rng.randint(2, 4)):
            parts.append(f"## {rng.choice(WORDS).title()} {section}")
            for _ in range(rng.randint(1, 3)):
                parts.append(" ".join(sentence() for _ in range(rng.randint(2, 5))))
            if rng.random() < 0.3:
                parts.append("\n".join(f"- {sentence()} [[Note {rng.randrange(notes)}]]" for _ in range(3)))
            if rng.random() < 0.15:
                parts.append(
                    "```python\n" + "\n".join(f"x{i} = {i}  # {rng.choice(WORDS)}" for i in range(8)) + "\n```"
                )
            if rng.random() < 0.1:
                parts.append("| a | b |\n|---|---|\n" + "\n".join(f"| {rng.choice(WORDS)} | {i} |" for i in range(5)))
        (folder / f"Note {number}.md").write_text("\n\n".join(parts) + "\n", encoding="utf-8")


def read_notes(root: Path) -> list[tuple[str, str]]:
    return [(p.relative_to(root).as_posix(), p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.md"))]


def chunking_throughput(notes: list[tuple[str, str]], budget: ChunkBudget, count: Callable[[str], int]) -> dict:
    """Best of three: parse and chunk every note, in MB/s."""
    size = sum(len(text.encode()) for _, text in notes)
    best = float("inf")
    chunks = 0
    for _ in range(3):
        started = time.perf_counter()
        chunks = sum(len(chunk_note(parse_note(path, text), budget, count)) for path, text in notes)
        best = min(best, time.perf_counter() - started)
    return {"notes": len(notes), "mb": size / 1e6, "seconds": best, "mb_per_s": size / 1e6 / best, "chunks": chunks}


async def sync(ingestor: Ingestor, root: Path) -> tuple[float, SyncFinished]:
    started = time.perf_counter()
    finished = None
    async for event in ingestor.sync(root):
        if isinstance(event, SyncFinished):
            finished = event
    assert finished is not None
    return time.perf_counter() - started, finished


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def bench_local_ingest(db: Database, embedder: Embedder) -> dict:
    await embedder.ensure_ready()  # load the model before the clock starts: measure the pipeline, not the load
    ingestor = Ingestor(db, embedder, IngestSection())
    seconds, finished = await sync(ingestor, OBSIDIAN_HELP)
    async with db.pool.acquire() as connection:
        contents = [row["content"] for row in await connection.fetch("SELECT content FROM vault_chunks ORDER BY id")]
    started = time.perf_counter()
    await embedder.embed_documents(contents)
    raw = time.perf_counter() - started
    again, second = await sync(ingestor, OBSIDIAN_HELP)
    return {
        "seconds": seconds,
        "chunks": finished.totals.chunks_embedded,
        "raw_seconds": raw,
        "resync_seconds": again,
        "resync_embedded": second.totals.chunks_embedded,
        "peak_rss_mb": peak_rss_mb(),
    }


async def local_ingest_in_this_process(runtime: str, data_dir: Path) -> dict:
    """bench_local_ingest with `runtime`, over a database of its own in `data_dir`."""
    embedder = create_embedder(EmbeddingSection(runtime=runtime), models_dir=data_dir / "models")  # type: ignore[arg-type]
    db = await Database.open(load_settings(data_dir=data_dir))
    try:
        return await bench_local_ingest(db, embedder)
    finally:
        await db.close()


def local_ingest(runtime: str, data_dir: Path) -> dict:
    """The local ingest of Obsidian Help with `runtime`, in a process of its own (its peak RSS is its own), after a
    process of its own has made the runtime's export, if it has one."""
    # The runtime's one-time export (which imports torch) is made first, so it is not in the measured process.
    subprocess.run(
        [sys.executable, "-m", "secondbrain", "prepare-model", "--runtime", runtime, "--models-dir",
         str(data_dir / "models")],
        env=clean_environ(), check=True,
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "bench.ingest", "--local-only", runtime, "--data-dir", str(data_dir)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


async def bench_large_vault(db: Database, root: Path, notes: int) -> dict:
    async with OllamaServer(dimensions=768) as server:
        embedder = create_embedder(
            EmbeddingSection(provider="ollama", model="nomic-embed-text", batch_size=64, concurrency=2),
            {"OLLAMA_URL": server.root_url},
        )
        ingestor = Ingestor(db, embedder, IngestSection())
        first, finished = await sync(ingestor, root)
        noop = [await sync(ingestor, root) for _ in range(3)]
        target = sorted(await asyncio.to_thread(lambda: list(root.rglob("*.md"))))[notes // 2]
        text = target.read_text(encoding="utf-8")
        paragraph = next(line for line in text.splitlines() if len(line) > 80)
        target.write_text(text.replace(paragraph, paragraph + " An edited sentence.", 1), encoding="utf-8")
        edit_seconds, edited = await sync(ingestor, root)
        async with db.pool.acquire() as connection:
            chunks_in_note = await connection.fetchval(
                "SELECT count(*) FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id WHERE f.path = $1",
                target.relative_to(root).as_posix(),
            )
    return {
        "notes": notes,
        "first_seconds": first,
        "first_chunks": finished.totals.chunks_embedded,
        "noop_seconds": min(seconds for seconds, _ in noop),
        "noop_embedded": max(event.totals.chunks_embedded for _, event in noop),
        "edit_seconds": edit_seconds,
        "edit_embedded": edited.totals.chunks_embedded,
        "chunks_in_note": chunks_in_note,
    }


async def main(notes: int) -> None:
    os.environ.pop("DATABASE_URL", None)  # never write benchmark data into a real database
    # The embedded servers stop when their processes exit, after this block: what they leave is not an error.
    with tempfile.TemporaryDirectory(prefix="secondbrain-bench-", ignore_cleanup_errors=True) as tmp:
        tmp_path = Path(tmp)
        large = tmp_path / "vault"
        generate_vault(large, notes)
        local = create_embedder(EmbeddingSection())
        openai_counter = create_embedder(EmbeddingSection(provider="openai"), {"OPENAI_API_KEY": "unused"})
        rows = []
        corpora = [("obsidian-help", read_notes(OBSIDIAN_HELP))] if OBSIDIAN_HELP.is_dir() else []
        corpora.append((f"generated, {notes} notes", read_notes(large)))
        for name, corpus in corpora:
            for label, embedder in (("MiniLM WordPiece", local), ("cl100k", openai_counter)):
                budget = ChunkBudget.for_window(embedder.max_document_tokens)
                result = chunking_throughput(corpus, budget, embedder.count_tokens)
                rows.append([name, label, f"{budget.max_tokens}/{budget.overlap_tokens}", result["notes"],
                             f"{result['mb']:.1f}", result["chunks"], f"{result['mb_per_s']:.2f}"])  # fmt: skip
        chunk_obsidian = next((r for r in rows if r[0] == "obsidian-help" and r[1] == "MiniLM WordPiece"), None)

        db = await Database.open(load_settings(data_dir=tmp_path / "data"))
        try:
            body = ["### Chunking throughput (parse + chunk, best of 3)", ""]
            body.append(table(["vault", "tokenizer", "budget", "notes", "MB", "chunks", "MB/s"], rows))
            if OBSIDIAN_HELP.is_dir():
                results = {r: await asyncio.to_thread(local_ingest, r, tmp_path / f"data-{r}") for r in RUNTIMES}
                mb = float(chunk_obsidian[4]) if chunk_obsidian else 0
                chunk_seconds = mb / float(chunk_obsidian[6]) if chunk_obsidian else 0
                base = results[RUNTIMES[0]]

                def measures(result: dict) -> list[str]:
                    rate = result["chunks"] / result["seconds"]
                    return [
                        str(result["chunks"]),
                        f"{result['seconds']:.1f} s",
                        f"{rate:.1f} chunks/s ({rate / (base['chunks'] / base['seconds']):.2f}x)",
                        f"{result['chunks'] / result['raw_seconds']:.1f} chunks/s ({result['raw_seconds']:.1f} s)",
                        f"{result['seconds'] / result['raw_seconds'] - 1:.1%}",
                        f"{chunk_seconds / result['seconds']:.1%}",
                        f"{result['resync_seconds']:.2f} s, {result['resync_embedded']} chunks embedded",
                        f"{result['peak_rss_mb']:.0f} MB",
                    ]

                labels = [
                    "chunks embedded", "ingest wall time (model already loaded)", "ingest throughput (vs torch)",
                    "embedder alone on the same chunks", "pipeline overhead over the embedder (target < 15%)",
                    "chunking share of ingest time (target < 10%)", "second sync", "peak memory of the process (RSS)",
                ]  # fmt: skip
                columns = [measures(results[r]) for r in RUNTIMES]
                body += ["", "### Full ingest of obsidian-help with the local embedder (all-MiniLM-L6-v2, CPU), "
                         "by runtime (`embedding.runtime`), each in its own process and database", ""]  # fmt: skip
                body.append(table(["measure", *RUNTIMES], [[label, *(c[i] for c in columns)]
                                                           for i, label in enumerate(labels)]))  # fmt: skip
            large_result = await bench_large_vault(db, large, notes)
            body += ["", f"### A {notes}-note generated vault (embeddings from a local Ollama-protocol server)", ""]
            body.append(table(["measure", "value"], [
                ["first sync", f"{large_result['first_seconds']:.1f} s, {large_result['first_chunks']} chunks"],
                ["no-op re-sync (best of 3; target < 3 s)", f"{large_result['noop_seconds']:.2f} s, "
                                                            f"{large_result['noop_embedded']} chunks embedded"],
                ["edit one paragraph of one note, then sync", f"{large_result['edit_seconds']:.2f} s, "
                 f"{large_result['edit_embedded']} of the note's {large_result['chunks_in_note']} chunks re-embedded"],
            ]))  # fmt: skip
        finally:
            await db.close()
        write_section("ingest", "Ingest", "\n".join(body))
        print("\n".join(body))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=10_000, help="notes in the generated vault (default 10000)")
    parser.add_argument("--local-only", choices=RUNTIMES, help="only the local ingest with this runtime, as JSON")
    parser.add_argument("--data-dir", type=Path, help="with --local-only: the data directory to use")
    arguments = parser.parse_args()
    if arguments.local_only:
        os.environ.pop("DATABASE_URL", None)
        print(json.dumps(asyncio.run(local_ingest_in_this_process(arguments.local_only, arguments.data_dir))))
    else:
        asyncio.run(main(arguments.notes))
