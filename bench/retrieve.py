"""Retrieve latency and how it grows: the hybrid SQL statement alone, and a whole Retrieve call through gRPC (query
embedding with the local model, SQL, fusion, expansion; no LLM) under each local embedder runtime, at 10,000, 100,000
and 1,000,000 generated chunks, with the disk each relation takes and EXPLAIN ANALYZE.

Run with `make bench` (or `python -m bench.retrieve`); results go to docs/benchmarks.md. Uses its own embedded
PostgreSQL in a temporary directory, never DATABASE_URL. A million chunks take about an hour to load and index on
2 cores and about 12 GB of disk.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import grpc
import numpy as np

from bench.report import table, write_section
from secondbrain.config import Config, load_config
from secondbrain.db import Database
from secondbrain.db.embedding_model import ModelRecord
from secondbrain.embedding import create_embedder
from secondbrain.embedding.base import Embedder
from secondbrain.ingest import store as ingest_store
from secondbrain.retrieve import store
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.server import build_retriever, create_server
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.runner import ServiceDeps
from secondbrain.vault_config import EmbeddingSection

DIMENSION = 384
CHUNKS_PER_NOTE = 10
VOCABULARY = 6000
RUNTIMES = ("torch", "onnx")
"""The local embedder's runtimes measured side by side: the path before issue 23, and the ONNX export."""
SIZE_COLUMNS = ["chunks", "postings", "load and index", "chunks table", "postings table", "indexes", "SQL p50 ms",
                "SQL p95 ms"]  # fmt: skip
LATENCY_COLUMNS = ["chunks", "runtime", "query embedding p50 ms", "SQL p50 ms", "Retrieve p50 ms", "Retrieve p95 ms",
                   "Retrieve/SQL p50", "the service's own stages, p50 ms"]  # fmt: skip
BULK_TABLES = ("vault_chunks", "chunk_postings")
"""Their secondary indexes are dropped for the load and built once after it: much faster than growing them row by row
(HNSW above all), with the same definitions as the migrations'."""


def vocabulary(rng: random.Random) -> list[str]:
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    words = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def zipf_text(rng: random.Random, words: list[str], weights: list[float], length: int) -> str:
    return " ".join(rng.choices(words, weights, k=length))


async def load(db: Database, chunks: int, seed: int = 11) -> list[str]:
    """Write `chunks` chunks (Zipf-distributed words, random unit vectors) through ingest's own write path."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    vectors = np.random.default_rng(seed).standard_normal((chunks, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    async with db.pool.acquire() as connection:
        definitions = await connection.fetch(
            "SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS sql FROM pg_index i "
            "WHERE i.indrelid = ANY($1::regclass[]) AND NOT i.indisprimary AND NOT i.indisunique",
            list(BULK_TABLES),
        )
        for definition in definitions:
            await connection.execute(f"DROP INDEX {definition['name']}")
        await ingest_store.switch_model(
            connection, ModelRecord("local", "sentence-transformers/all-MiniLM-L6-v2", DIMENSION)
        )
        for note in range(chunks // CHUNKS_PER_NOTE):
            rows = [
                ingest_store.ChunkRow(i, [f"Section {i}"], i * 5 + 1, i * 5 + 4,
                                      f"Note {note} > Section {i}\n\n" + zipf_text(rng, words, weights, 90),
                                      "", 120, vectors[note * CHUNKS_PER_NOTE + i])
                for i in range(CHUNKS_PER_NOTE)
            ]  # fmt: skip
            await ingest_store.write_note(connection, ingest_store.NoteRow(
                path=f"Area {note % 30}/Note {note}.md", title=f"Note {note}", body="", frontmatter={}, aliases=[],
                tags=[f"area/{note % 30}"], content_hash=str(note), mtime=datetime.now(UTC), size=1,
                status="indexed", chunks=rows,
            ))  # fmt: skip
            if note % 10_000 == 9_999:
                print(f"  {(note + 1) * CHUNKS_PER_NOTE:,} chunks written", flush=True)
        # A million 384-d vectors and their graph need about 2 GB to build HNSW in memory; less spills and crawls.
        await connection.execute("SET maintenance_work_mem = '4GB'")
        for definition in definitions:
            await connection.execute(definition["sql"], timeout=4 * 3600)
        await connection.execute("VACUUM ANALYZE", timeout=3600)
    # Queries of three to five mid-frequency words, as people type them.
    return [" ".join(rng.sample(words[20:2000], rng.randint(3, 5))) for _ in range(60)]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]


async def time_sql(db: Database, queries: list[str], vectors: list[np.ndarray]) -> tuple[float, float]:
    samples = []
    async with db.pool.acquire() as connection:
        for query, vector in zip(queries * 2, vectors * 2, strict=True):  # second pass measured warm
            started = time.perf_counter()
            await store.hybrid_candidates(connection, query, 40, Filters(), vector)
            samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples[len(queries) :])


async def time_embedding(embedder: Embedder, queries: list[str]) -> tuple[list[np.ndarray], float]:
    """The queries' vectors, and the p50 of embedding one (the second of two passes)."""
    samples, vectors = [], []
    for query in queries * 2:
        started = time.perf_counter()
        vectors.append(await embedder.embed_query(query))
        samples.append((time.perf_counter() - started) * 1000)
    return vectors[: len(queries)], percentiles(samples[len(queries) :])[0]


async def disk(db: Database) -> dict[str, int]:
    """Bytes on disk: each bulk table (with its TOAST), and each of its indexes."""
    async with db.pool.acquire() as connection:
        rows = await connection.fetch(
            "SELECT relname AS name, pg_table_size(oid) AS bytes FROM pg_class WHERE relname = ANY($1::text[]) "
            "UNION ALL SELECT i.indexrelid::regclass::text, pg_relation_size(i.indexrelid) FROM pg_index i "
            "WHERE i.indrelid = ANY($1::regclass[]) ORDER BY 2 DESC",
            list(BULK_TABLES),
        )
    return {row["name"]: row["bytes"] for row in rows}


def megabytes(size: int) -> str:
    return f"{size / 2**20:,.0f} MB"


async def explain(db: Database, query: str, vector: np.ndarray) -> str:
    sql, params = store.candidates_statement(query, 40, Filters(), vector)
    explained = store.Statement("EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF) " + sql, params)
    async with db.pool.acquire() as connection:
        rows = await store.fetch(connection, explained, vector_scan=True)
    plan = "\n".join(row[0] for row in rows)
    return re.sub(r"'\[[^\]]{60,}\]'", "'[…384 floats…]'", plan)


def with_runtime(config: Config, runtime: str) -> Config:
    embedding = config.vault.embedding.model_copy(update={"runtime": runtime})
    vault = config.vault.model_copy(update={"embedding": embedding})
    return Config(config.settings, vault)


async def time_service(config: Config, db: Database, queries: list[str]) -> tuple[float, float, str]:
    """Retrieve's p50 and p95 as a client sees them, and the p50 of each stage as the service timed it (its `done`
    event), so what the call adds over the SQL is accounted for."""
    retriever = build_retriever(config, db)
    running = await create_server("127.0.0.1:0", ServiceDeps(config, db), retriever)
    await running.start()
    assert retriever.embedder is not None
    await retriever.embedder.ensure_ready()
    samples: list[float] = []
    stages: dict[str, list[float]] = {}
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = pb_grpc.RetrieveServiceStub(channel)
            for query in queries * 2:
                request = pb.RetrieveRequest(query=query, options=pb.RetrieveOptions(condense=False, max_passages=8))
                started = time.perf_counter()
                events = [event async for event in stub.Retrieve(request, timeout=60)]
                samples.append((time.perf_counter() - started) * 1000)
                assert events[0].plan.vector_arm_ran, events[0].plan.vector_arm_skipped_reason
                for timing in events[-1].done.timings:
                    stages.setdefault(timing.stage, []).append(timing.milliseconds)
    finally:
        await running.stop(grace=1)
        await retriever.embedder.aclose()
    p50, p95 = percentiles(samples[len(queries) :])
    own = ", ".join(f"{stage} {statistics.median(ms[len(queries) :]):.1f}" for stage, ms in stages.items())
    return p50, p95, own


async def measure(size: int, embedders: dict[str, Embedder], models: Path) -> tuple[list[str], list[list[str]], str]:
    """One index size in a database of its own: the sizes row, a latency row per runtime, and the plan."""
    with tempfile.TemporaryDirectory(prefix="secondbrain-bench-") as tmp:
        data = Path(tmp) / "data"
        # The ONNX export made once for this run, so the service does not export it again for every size.
        shutil.copytree(models, data / "models")
        os.environ["SECONDBRAIN_DATA_DIR"] = str(data)
        config = load_config()
        db = await Database.open(config.settings)
        try:
            print(f"{size:,} chunks: loading", flush=True)
            started = time.perf_counter()
            queries = await load(db, size)
            load_seconds = time.perf_counter() - started
            vectors: list[np.ndarray] = []
            latency = []
            for runtime, embedder in embedders.items():
                runtime_vectors, embed_p50 = await time_embedding(embedder, queries)
                vectors = vectors or runtime_vectors  # the runtimes' vectors are the same model's; SQL uses one set
                latency.append([runtime, embed_p50])
            sql_p50, sql_p95 = await time_sql(db, queries, vectors)
            latency_rows = []
            for runtime, embed_p50 in latency:
                print(f"{size:,} chunks: Retrieve with {runtime}", flush=True)
                service_p50, service_p95, stages = await time_service(with_runtime(config, runtime), db, queries)
                latency_rows.append([f"{size:,}", runtime, f"{embed_p50:.1f}", f"{sql_p50:.1f}", f"{service_p50:.1f}",
                                     f"{service_p95:.1f}", f"{service_p50 / sql_p50:.2f}x", stages])  # fmt: skip
            async with db.pool.acquire() as connection:
                postings = await connection.fetchval("SELECT count(*) FROM chunk_postings")
            sizes = await disk(db)
            indexes = ", ".join(
                f"{name.removeprefix('vault_').removeprefix('chunk_')} {megabytes(size)}"
                for name, size in sizes.items()
                if name not in BULK_TABLES and size > 16 * 8192
            )
            size_row = [f"{size:,}", f"{postings:,}", f"{load_seconds:.0f} s", megabytes(sizes["vault_chunks"]),
                        megabytes(sizes["chunk_postings"]), indexes, f"{sql_p50:.1f}", f"{sql_p95:.1f}"]  # fmt: skip
            plan = await explain(db, queries[0], vectors[0])
        finally:
            await db.close()
    return size_row, latency_rows, plan


async def main(sizes: list[int]) -> None:
    os.environ.pop("DATABASE_URL", None)  # never write benchmark data into a real database
    models = Path(tempfile.mkdtemp(prefix="secondbrain-bench-models-"))
    embedders = {runtime: create_embedder(EmbeddingSection(runtime=runtime), models_dir=models / "models")
                 for runtime in RUNTIMES}  # fmt: skip
    for embedder in embedders.values():
        await embedder.ensure_ready()
    size_rows, latency_rows, plans = [], [], []
    try:
        for size in sizes:
            size_row, rows, plan = await measure(size, embedders, models / "models")
            size_rows.append(size_row)
            latency_rows += rows
            plans.append((size, plan))
    finally:
        shutil.rmtree(models, ignore_errors=True)
    body = [
        "Queries: 60 of three to five words drawn from a Zipf-distributed vocabulary, each measured warm (the second "
        "of two passes). Chunks: about 90 words each, random 384-d unit vectors, ten to a note, written through "
        "ingest's write path (the triggers keep the BM25 postings), the secondary indexes built once after the load. "
        "Service: a whole `Retrieve` over gRPC with condensing off, so no LLM: query embedding with the local MiniLM "
        "under each runtime, the hybrid statement, fusion, neighbour expansion, passages.",
        "",
        "What the index costs as it grows (disk: the table with its TOAST, the postings table, each index over "
        "128 kB):",
        "",
        table(SIZE_COLUMNS, size_rows),
        "",
        "A whole Retrieve under each embedder runtime (`torch`: the path before issue 23; `onnx`: the export):",
        "",
        table(LATENCY_COLUMNS, latency_rows),
        "",
        "Targets: SQL p50 under 30 ms at 100,000 chunks; Retrieve p50 under 2x the SQL alone. The query embedding is "
        "the same whatever the index size; the rest of Retrieve over the SQL is gRPC, neighbour expansion and "
        "passages.",
    ]
    for size, plan in plans:
        body += ["", f"`EXPLAIN ANALYZE` of the hybrid statement at {size:,} chunks (vector literal elided):", "",
                 "```", plan, "```"]  # fmt: skip
    write_section("retrieve", "Retrieve latency", "\n".join(body))
    print("\n".join(body))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, nargs="+", default=[10_000, 100_000, 1_000_000],
                        help="index sizes to measure (default 10,000, 100,000 and 1,000,000)")  # fmt: skip
    asyncio.run(main(parser.parse_args().chunks))
