"""What the note reader costs (issue 45): opening a note as the reader does (GetNote, GetNoteLinks, GetRelatedNotes
over gRPC) for the largest note of the Obsidian Help vault and of Rust by Example, each indexed with the local
embedder; and GetRelatedNotes, GetFacets and SuggestQuestions at 100,000 generated chunks (10,000 notes,
bench/retrieve's index, with five wikilinks a note added), with the nearest-passages statement alone and its
EXPLAIN ANALYZE.

Run with `python -m bench.reader`; results go to docs/benchmarks.md. Uses its own embedded PostgreSQL in a temporary
directory, never DATABASE_URL.
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
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc

from bench.report import table, write_section
from bench.retrieve import load, percentiles
from secondbrain.config import load_config
from secondbrain.db import Database
from secondbrain.ingest.server import build_ingestor
from secondbrain.retrieve import related
from secondbrain.retrieve.server import build_retriever, create_server
from secondbrain.retrieve.store import Statement, fetch, note_identity
from secondbrain.retrieve.store.related import _NEAREST, EF_SEARCH
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.runner import ServiceDeps

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "vaults"
VAULTS = {"Obsidian Help": DATA / "obsidian-help", "Rust by Example": DATA / "rust-by-example"}
ROUNDS = 20
LINKS_PER_NOTE = 5
VAULT_COLUMNS = ["vault", "largest note", "first, all three", "GetNote p50", "GetNoteLinks p50",
                 "GetRelatedNotes p50", "all three p50", "its three most related"]  # fmt: skip


async def serving(config: object, db: Database) -> tuple[object, pb_grpc.RetrieveServiceStub, grpc.aio.Channel]:
    retriever = build_retriever(config, db)  # type: ignore[arg-type]
    running = await create_server("127.0.0.1:0", ServiceDeps(config, db), retriever)  # type: ignore[arg-type]
    await running.start()
    if retriever.embedder is not None:
        await retriever.embedder.ensure_ready()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
    return running, pb_grpc.RetrieveServiceStub(channel), channel


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


async def open_note(stub: pb_grpc.RetrieveServiceStub, path: str) -> dict[str, float]:
    """One opening of `path` as the reader does it, each call's milliseconds and the three together."""
    note = await timed(lambda: stub.GetNote(pb.GetNoteRequest(path=path), timeout=30))
    links = await timed(lambda: stub.GetNoteLinks(pb.GetNoteLinksRequest(path=path), timeout=30))
    near = await timed(lambda: stub.GetRelatedNotes(pb.GetRelatedNotesRequest(path=path), timeout=30))
    return {"GetNote": note, "GetNoteLinks": links, "GetRelatedNotes": near, "all three": note + links + near}


async def vault_row(name: str, source: Path, root: Path) -> list[str]:
    vault = root / "vault"
    shutil.copytree(source, vault)
    os.environ.update(SECONDBRAIN_DATA_DIR=str(root / "data"), SECONDBRAIN_VAULT=str(vault))
    config = load_config()
    db = await Database.open(config.settings)
    try:
        print(f"{name}: indexing", flush=True)
        async for _ in build_ingestor(config, db, dict(os.environ)).sync(vault):
            pass
        async with db.pool.acquire() as connection:
            largest = await connection.fetchrow(
                "SELECT f.path, length(f.body) AS chars, (SELECT count(*) FROM vault_chunks c WHERE c.file_id = f.id) "
                "AS chunks, (SELECT count(*) FROM vault_links l WHERE l.file_id = f.id) AS links, "
                "(SELECT count(*) FROM vault_chunks) AS all_chunks FROM vault_files f ORDER BY length(f.body) DESC "
                "LIMIT 1"
            )
        assert largest is not None
        running, stub, channel = await serving(config, db)
        try:
            first = await open_note(stub, largest["path"])
            rounds = [await open_note(stub, largest["path"]) for _ in range(ROUNDS)]
            related_notes = await stub.GetRelatedNotes(pb.GetRelatedNotesRequest(path=largest["path"]), timeout=30)
        finally:
            await channel.close()
            await running.stop(grace=1)  # type: ignore[attr-defined]
    finally:
        await db.close()
    warm = {key: statistics.median(r[key] for r in rounds) for key in first}
    top = "; ".join(f"{n.path} ({n.reason})" for n in related_notes.notes[:3])
    return [
        name,
        f"{largest['path']} ({largest['chars']:,} characters, {largest['chunks']} passages, {largest['links']} links; "
        f"vault {largest['all_chunks']:,} passages)",
        f"{first['all three']:.1f}",
        f"{warm['GetNote']:.1f}",
        f"{warm['GetNoteLinks']:.1f}",
        f"{warm['GetRelatedNotes']:.1f}",
        f"{warm['all three']:.1f}",
        top or "none",
    ]


async def generated(root: Path, size: int, samples: int) -> tuple[list[list[str]], str]:
    os.environ.update(SECONDBRAIN_DATA_DIR=str(root / "data"))
    os.environ.pop("SECONDBRAIN_VAULT", None)
    config = load_config()
    db = await Database.open(config.settings)
    try:
        print(f"{size:,} chunks: loading", flush=True)
        await load(db, size)
        async with db.pool.acquire() as connection:
            # Five wikilinks a note, to notes by title, so the link half of the statement has a vault's links to read.
            await connection.execute(
                f"""
                INSERT INTO vault_links (file_id, ordinal, target, line)
                SELECT f.id, g, 'Note ' || ((f.id * 7919 + g * 104729) % (SELECT count(*) FROM vault_files)), g
                FROM vault_files f CROSS JOIN generate_series(1, {LINKS_PER_NOTE}) g
                """
            )
            await connection.execute("ANALYZE vault_links")
            paths = [row["path"] for row in await connection.fetch("SELECT path FROM vault_files ORDER BY id")]
            notes = await connection.fetchval("SELECT count(*) FROM vault_files")
            links = await connection.fetchval("SELECT count(*) FROM vault_links")
        chosen = random.Random(7).sample(paths, samples)
        running, stub, channel = await serving(config, db)
        rows: list[list[str]] = []
        try:
            for path in chosen[:3]:  # warm the caches and the index
                await stub.GetRelatedNotes(pb.GetRelatedNotesRequest(path=path), timeout=30)
            ms = [
                await timed(lambda p=path: stub.GetRelatedNotes(pb.GetRelatedNotesRequest(path=p), timeout=30))
                for path in chosen
            ]
            p50, p95 = percentiles(ms)
            rows.append(["GetRelatedNotes (gRPC)", f"{len(ms)} notes", f"{p50:.1f}", f"{p95:.1f}"])
            sql_ms, plan = await nearest_sql(db, chosen)
            p50, p95 = percentiles(sql_ms)
            rows.append(["nearest-passages statement alone", f"{len(sql_ms)} notes", f"{p50:.1f}", f"{p95:.1f}"])
            facets = [await timed(lambda: stub.GetFacets(pb.GetFacetsRequest(), timeout=30)) for _ in range(10)]
            p50, p95 = percentiles(facets)
            rows.append(["GetFacets (gRPC), every note", "10 calls", f"{p50:.1f}", f"{p95:.1f}"])
            first = await timed(lambda: stub.SuggestQuestions(pb.SuggestQuestionsRequest(limit=4), timeout=60))
            cached = [
                await timed(lambda: stub.SuggestQuestions(pb.SuggestQuestionsRequest(limit=4), timeout=60))
                for _ in range(10)
            ]
            rows.append(["SuggestQuestions (gRPC), drawn and checked", "1 call", f"{first:.1f}", ""])
            p50, p95 = percentiles(cached)
            rows.append(["SuggestQuestions (gRPC), same index", "10 calls", f"{p50:.1f}", f"{p95:.1f}"])
        finally:
            await channel.close()
            await running.stop(grace=1)  # type: ignore[attr-defined]
    finally:
        await db.close()
    summary = f"{size:,} passages in {notes:,} notes, {links:,} wikilinks"
    return [[summary, *row] for row in rows], plan


async def nearest_sql(db: Database, paths: list[str]) -> tuple[list[float], str]:
    """The nearest-passages statement alone (the HNSW scans and the roll-up), and the plan of the first."""
    samples: list[float] = []
    plan = ""
    async with db.pool.acquire() as connection:
        for path in paths:
            note = await note_identity(connection, path)
            assert note is not None
            sql = _NEAREST.format(dim=384, me="$1", sources="$2", per_source="$3", readable="true")
            params: list[object] = [note.id, related.SAMPLED_CHUNKS, related.PER_SOURCE]
            started = time.perf_counter()
            await fetch(connection, Statement(sql, params), vector_scan=True, ef_search=EF_SEARCH)
            samples.append((time.perf_counter() - started) * 1000)
            if not plan:
                explained = Statement("EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF) " + sql, params)
                rows = await fetch(connection, explained, vector_scan=True, ef_search=EF_SEARCH)
                plan = "\n".join(row[0] for row in rows)
    return samples, re.sub(r"'\[[^\]]{60,}\]'", "'[…]'", plan)


async def main(size: int, samples: int) -> None:
    os.environ.pop("DATABASE_URL", None)  # never write benchmark data into a real database
    load_before = os.getloadavg()[0]
    vault_rows = []
    for name, source in VAULTS.items():
        with tempfile.TemporaryDirectory(prefix="secondbrain-bench-") as tmp:
            vault_rows.append(await vault_row(name, source, Path(tmp)))
    with tempfile.TemporaryDirectory(prefix="secondbrain-bench-") as tmp:
        generated_rows, plan = await generated(Path(tmp), size, samples)
    body = "\n".join(
        [
            "Opening the largest note of each vault as the reader does: GetNote, GetNoteLinks and GetRelatedNotes "
            "over gRPC, one after another, against a retrieve service on this machine; the vault indexed first with "
            f"the local embedder (all-MiniLM-L6-v2). First opening, then the median of {ROUNDS} more (milliseconds).",
            "",
            table(VAULT_COLUMNS, vault_rows),
            "",
            f"At {size:,} generated passages (bench/retrieve's index: random 384-d unit vectors, the worst case for "
            "an HNSW graph, ten passages to a note), each call warm. GetRelatedNotes compares "
            f"{related.SAMPLED_CHUNKS} of the note's passages, each an HNSW scan for its {related.PER_SOURCE} "
            f"nearest other passages (`hnsw.ef_search` {EF_SEARCH}, iterative scan), then reads its links and "
            "shared tags (each tag is on 333 notes). Bar: well under 200 ms.",
            "",
            table(["index", "call", "sampled", "p50 ms", "p95 ms"], generated_rows),
            "",
            f"The machine's load average was {load_before:.1f} when the run began and {os.getloadavg()[0]:.1f} at "
            f"its end, on {os.cpu_count()} cores shared with other work: the figures are wall-clock under that load.",
            "",
            "`EXPLAIN ANALYZE` of the nearest-passages statement for one note (vector literals elided):",
            "",
            "```",
            plan,
            "```",
        ]
    )
    write_section("reader", "The note reader: opening a note, related notes, facets, questions", body)
    print(body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=60)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.chunks, arguments.samples))
