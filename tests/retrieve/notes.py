"""Notes written the way ingest writes them (`store.write_note`), for the tests of note search and its statements.

Their chunks get constructed 384-d unit vectors whose cosine similarity to the query vector (the first axis) is chosen
per chunk, so the vector ranking is known.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime

import asyncpg
import numpy as np

from secondbrain.ingest import store
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.note_search import NoteSearchResult, search_notes

DIM = 384
QUERY_VECTOR = np.eye(DIM, dtype=np.float32)[0]
NO_FILTERS = Filters()


def unit(similarity: float, seed: int) -> np.ndarray:
    """A unit vector whose cosine similarity with QUERY_VECTOR is exactly `similarity`."""
    noise = np.random.default_rng(seed).standard_normal(DIM)
    noise[0] = 0.0
    noise /= np.linalg.norm(noise)
    return (similarity * QUERY_VECTOR + math.sqrt(1 - similarity**2) * noise).astype(np.float32)


def note(
    path: str,
    body: str,
    *,
    title: str | None = None,
    tags: Sequence[str] = (),
    chunks: Sequence[tuple[Sequence[str], str, float]] | None = None,
) -> store.NoteRow:
    """A note as ingest stores it; `chunks` are (heading path, text, similarity to the query vector), by default
    one chunk holding the body, orthogonal to the query vector."""
    title = title if title is not None else path.rsplit("/", 1)[-1].removesuffix(".md")
    seed = zlib.crc32(path.encode())
    rows = [
        store.ChunkRow(
            index=i,
            heading_path=list(headings),
            start_line=1 + i,
            end_line=1 + i,
            content=f"{' > '.join((title, *headings))}\n\n{text}",
            context="",
            token_count=len(text.split()),
            embedding=unit(similarity, seed + i),
        )
        for i, (headings, text, similarity) in enumerate(chunks if chunks is not None else [((), body, 0.0)])
    ]
    return store.NoteRow(
        path=path, title=title, body=body, frontmatter={}, aliases=[], tags=list(tags),
        content_hash=str(seed), mtime=datetime.now(UTC), size=len(body), status="indexed", chunks=rows,
    )  # fmt: skip


async def write(pool: asyncpg.Pool, *notes: store.NoteRow) -> None:
    async with pool.acquire() as connection:
        for row in notes:
            await store.write_note(connection, row)


async def search(
    pool: asyncpg.Pool,
    query: str,
    mode: str = "lexical",
    filters: Filters = NO_FILTERS,
    limit: int = 10,
    vector: np.ndarray | None = QUERY_VECTOR,
) -> NoteSearchResult:
    return await search_notes(pool, query, mode, filters, limit, vector)


async def paths(pool: asyncpg.Pool, query: str, mode: str = "lexical", **kwargs: object) -> list[str]:
    return [hit.path for hit in (await search(pool, query, mode, **kwargs)).hits]
