"""The search box's similarity floor (issue 33): how similar a note must be to a typed query to be listed by meaning
alone, when it does not contain the words.

Hybrid note search fuses the lexical and vector arms, and the vector arm always has neighbours: without a floor,
`quartz` listed all twelve demo notes, one of which says it. So a note found by the vector arm alone is listed only
when its best chunk's cosine similarity to the query is at least the floor.

How the floor is chosen, on our own question sets (chosen there, then checked once on the blind sets):
- A query is what a person types in a search box: each question's `answer_hint` (a few words from the answer).
- Positives: a question's expected notes; their similarity is the best chunk's.
- Unrelated: every other note that does not contain the query's words (no lexical match), the ones a floor should
  drop.
- The floor is the similarity above which 99% of the unrelated notes fall short, on our own sets pooled, rounded up
  to 0.05: a note listed for its meaning alone is closer to the query than 99 of 100 notes that neither hold the words
  nor answer. (A floor that kept most expected notes without the words is not to be had: on short typed queries their
  median similarity, 0.11 to 0.21, is barely above the unrelated notes', 0.10 to 0.12. Expected notes that hold the
  words are listed by the lexical arm whatever the floor.)

`python -m bench.search_floor` prints the distributions and writes the section to docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import math
import os
import statistics
from pathlib import Path

import numpy as np

from bench.report import table, write_section
from bench.vault_questions import VAULTS
from secondbrain.config import load_config
from secondbrain.db import Database
from secondbrain.evaluation.questions import load_qa
from secondbrain.ingest.commands import sync_in_process
from secondbrain.retrieve.server import build_retriever
from secondbrain.retrieve.store.notes import VECTOR_ONLY_FLOOR

CACHE = Path.home() / ".cache" / "secondbrain-bench"
DROPPED_SHARE = 0.99

# Each note's best chunk similarity to the query, and whether the note contains the query's words.
_SIMILARITIES = """
    SELECT f.path,
           max(1 - (c.embedding <=> $1::vector)) AS similarity,
           bool_or(c.tsv @@ plainto_tsquery(secondbrain_ts_config(), $2)) AS contains
    FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id
    WHERE c.embedding IS NOT NULL
    GROUP BY f.path
"""


async def measure(data: str, vault: Path, questions: Path) -> tuple[list[float], list[float], list[float]]:
    """Similarities of (expected notes without the words, expected notes with them, unrelated notes)."""
    os.environ.pop("DATABASE_URL", None)
    os.environ["SECONDBRAIN_DATA_DIR"] = str(CACHE / data)
    os.environ["SECONDBRAIN_VAULT"] = str(vault)
    config = load_config()
    await sync_in_process(config, vault)
    db = await Database.open(config.settings)
    only_by_meaning: list[float] = []
    with_words: list[float] = []
    unrelated: list[float] = []
    try:
        retriever = build_retriever(config, db)
        for question in load_qa(questions).questions:
            query = question.answer_hint.strip()
            if not query:
                continue
            vectors, reason, _ = await retriever.query_vectors([query])
            assert vectors is not None, reason
            async with db.pool.acquire() as connection:
                rows = await connection.fetch(_SIMILARITIES, np.asarray(vectors[0], dtype=np.float32), query)
            for row in rows:
                if row["path"] in question.relevant:
                    (with_words if row["contains"] else only_by_meaning).append(float(row["similarity"]))
                elif not row["contains"]:
                    unrelated.append(float(row["similarity"]))
    finally:
        await db.close()
    return only_by_meaning, with_words, unrelated


def share_at_least(values: list[float], floor: float) -> float:
    return sum(value >= floor for value in values) / len(values) if values else math.nan


def quantile(values: list[float], q: float) -> float:
    return float(np.quantile(values, q)) if values else math.nan


async def main() -> None:
    own = [entry for entry in VAULTS if "blind" not in entry[0]]
    blind = [entry for entry in VAULTS if "blind" in entry[0]]
    measured = {name: await measure(data, vault, questions) for name, data, vault, questions in own + blind}
    pooled = [value for name, _, _, _ in own for value in measured[name][2]]
    chosen = math.ceil(quantile(pooled, DROPPED_SHARE) / 0.05) * 0.05
    rows = []
    for name, *_ in own + blind:
        by_meaning, with_words, unrelated = measured[name]
        rows.append(
            [
                name,
                f"{len(by_meaning)} / {len(with_words)} / {len(unrelated)}",
                f"{statistics.median(by_meaning):.2f}" if by_meaning else "-",
                f"{statistics.median(unrelated):.2f}" if unrelated else "-",
                f"{share_at_least(by_meaning, VECTOR_ONLY_FLOOR):.2f}",
                f"{share_at_least(with_words, VECTOR_ONLY_FLOOR):.2f}",
                f"{1 - share_at_least(unrelated, VECTOR_ONLY_FLOOR):.2f}",
            ]
        )
    body = (
        "How similar a note must be to a typed query to be listed by meaning alone, without the words "
        "(`VECTOR_ONLY_FLOOR` in services/retrieve/store/notes.py). Queries are the questions' `answer_hint`s, as "
        "typed in a search box. The floor is the similarity that "
        f"{DROPPED_SHARE:.0%} of the unrelated notes (neither holding the words nor expected) fall short of, on our "
        f"own sets pooled, rounded up to 0.05: **{chosen:.2f}** (the product uses {VECTOR_ONLY_FLOOR:.2f}). No "
        "floor keeps most expected notes that lack the words: their similarity to a short typed query is barely "
        "above the unrelated notes'. The blind sets were not used to choose it.\n\n"
        + table(
            [
                "set",
                "expected without / with the words / unrelated",
                "median sim., expected without",
                "median sim., unrelated",
                "expected without, kept",
                "expected with, kept by meaning too",
                "unrelated, dropped",
            ],
            rows,
        )
    )
    print(body)
    write_section("search-floor", "The search box's similarity floor", body)


if __name__ == "__main__":
    asyncio.run(main())
