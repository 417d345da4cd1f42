"""The BM25 tables stay exact through every write path: sync writes (COPY), replacements, cascade deletes, edits in
place, and a change of text search configuration."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import asyncpg

from secondbrain.ingest import store

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "storage",
    "vectors",
    "postgres",
    "running",
    "runs",
    "decisions",
    "decided",
    "notes",
]
SECTIONS = [[], ["Intro"], ["Intro", "Details"], ["Usage"]]


def note(path: str, texts: list[str], headings: list[list[str]] | None = None) -> store.NoteRow:
    headings = headings or [[] for _ in texts]
    return store.NoteRow(
        path=path, title=path.removesuffix(".md"), body="\n\n".join(texts), frontmatter={}, aliases=[], tags=["t"],
        content_hash=str(hash(tuple(texts))), mtime=datetime.now(UTC), size=1, status="indexed",
        chunks=[store.ChunkRow(i, heading, 1, 1, text, "", 5, None)
                for i, (text, heading) in enumerate(zip(texts, headings, strict=True))],
    )  # fmt: skip


async def assert_consistent(connection: asyncpg.Connection) -> None:
    """Every statistic equals what a recomputation from the chunks gives."""
    expected_postings = await connection.fetch(
        """SELECT l.lexeme, c.id, coalesce(array_length(l.positions, 1), 1) AS tf, c.lexeme_count AS length
           FROM vault_chunks c, unnest(c.tsv) l ORDER BY 1, 2"""
    )
    postings = await connection.fetch("SELECT lexeme, chunk_id, tf, length FROM chunk_postings ORDER BY 1, 2")
    assert [tuple(r) for r in postings] == [tuple(r) for r in expected_postings]
    stats = await connection.fetch("SELECT lexeme, df FROM lexeme_stats ORDER BY 1")
    expected_stats = await connection.fetch(
        "SELECT l.lexeme, count(*) AS df FROM vault_chunks c, unnest(c.tsv) l GROUP BY 1 ORDER BY 1"
    )
    assert [tuple(r) for r in stats] == [tuple(r) for r in expected_stats]
    corpus = await connection.fetchrow("SELECT chunks, total_length, sections FROM corpus_stats")
    expected_corpus = await connection.fetchrow(
        """SELECT count(*) AS chunks, coalesce(sum(tsvector_occurrences(tsv)), 0) AS total_length,
                  (SELECT count(*) FROM (SELECT DISTINCT file_id, heading_path FROM vault_chunks) s) AS sections
           FROM vault_chunks"""
    )
    assert tuple(corpus) == tuple(expected_corpus)


async def test_writes_replacements_and_deletes_keep_the_statistics_exact(connection: asyncpg.Connection) -> None:
    rng = random.Random(3)
    paths = [f"Note {i}.md" for i in range(6)]
    for _ in range(25):
        path = rng.choice(paths)
        if rng.random() < 0.25:
            await store.delete_notes(connection, [path])
        else:
            texts = [" ".join(rng.choices(WORDS, k=rng.randint(1, 12))) for _ in range(rng.randint(0, 4))]
            # Sections: runs of chunks under one heading path, which may come back later in the note.
            headings = [rng.choice(SECTIONS) for _ in texts]
            await store.write_note(connection, note(path, texts, headings))
        await assert_consistent(connection)


async def test_chunk_text_edited_in_place_and_embedding_updates(connection: asyncpg.Connection) -> None:
    await store.write_note(connection, note("A.md", ["storage decisions", "postgres running"]))
    await connection.execute("UPDATE vault_chunks SET content = 'gamma gamma delta' WHERE chunk_index = 0")
    await assert_consistent(connection)
    await connection.execute("UPDATE vault_chunks SET token_count = token_count + 1")
    await assert_consistent(connection)
    # Moved to another section in place (secondbrain replaces a note's chunks instead, but the count must hold).
    await connection.execute("UPDATE vault_chunks SET heading_path = '{Intro}' WHERE chunk_index = 1")
    await assert_consistent(connection)
    # A chunk added to a section that already has one (again not a path secondbrain takes) is no new section.
    await connection.execute(
        """INSERT INTO vault_chunks (file_id, chunk_index, heading_path, start_line, end_line, content, context,
                                     token_count)
           SELECT file_id, 9, heading_path, start_line, end_line, 'beta notes', context, token_count
           FROM vault_chunks WHERE chunk_index = 1"""
    )
    await assert_consistent(connection)


async def test_stemming_follows_the_configuration(connection: asyncpg.Connection) -> None:
    await store.write_note(connection, note("A.md", ["running runs decided"]))
    english = {r["lexeme"] for r in await connection.fetch("SELECT lexeme FROM lexeme_stats")}
    assert english == {"run", "decid"}
    await connection.execute("UPDATE search_config SET text_search_config = 'simple'")
    await connection.execute("SELECT secondbrain_rebuild_lexical_index()")
    simple = {r["lexeme"] for r in await connection.fetch("SELECT lexeme FROM lexeme_stats")}
    assert simple == {"running", "runs", "decided"}
    await assert_consistent(connection)
    assert await connection.fetchval("SELECT count(*) FROM vault_files WHERE tsv @@ 'running'::tsquery") == 1


async def test_a_run_the_parser_reads_as_a_host_or_file_is_indexed_in_linear_time(
    connection: asyncpg.Connection,
) -> None:
    # PostgreSQL's parser takes time quadratic in such a run: 160 KB of `a_b` took over two minutes of a core.
    run = "a_b" * 54_000
    await connection.execute("SET statement_timeout = '30s'")
    await store.write_note(connection, note("Runs.md", [f"zebra crossing {run} hedgehog", "storage decisions"]))
    lexemes = {r["lexeme"] for r in await connection.fetch("SELECT lexeme FROM lexeme_stats")}
    assert {"zebra", "cross", "hedgehog", "storag", "decis"} <= lexemes
    # The run is read in pieces of at most 100 characters; nothing longer becomes a word.
    assert max(len(lexeme) for lexeme in lexemes) <= 100
    await assert_consistent(connection)
    # A question holding the same run is parsed the same way, as quickly.
    question_lexemes = await connection.fetchval(
        "SELECT count(*) FROM unnest(to_tsvector(secondbrain_ts_config(), secondbrain_parsable($1)))", run[:8000]
    )
    assert question_lexemes > 1


async def test_a_note_of_many_sections_is_counted_in_linear_time(connection: asyncpg.Connection) -> None:
    # Each section's chunks were counted by a subquery of its own over all of the note's chunks: 16,000 one-line
    # sections kept a core busy past the 60 s statement timeout (a hostile probe's note of 165 KB).
    sections = 16_000
    await connection.execute("SET statement_timeout = '20s'")
    texts = [f"x{i}" for i in range(sections)]
    await store.write_note(connection, note("Headings.md", texts, [[f"h{i}"] for i in range(sections)]))
    assert await connection.fetchval("SELECT sections FROM corpus_stats") == sections
    # Written again with half its sections merged into one, the note counts each section once.
    halves = [[f"h{i}"] if i % 2 else ["merged"] for i in range(sections)]
    await store.write_note(connection, note("Headings.md", [*texts[:-1], "changed"], halves))
    await assert_consistent(connection)
    # And deleted: the delete trigger's count of the sections left is one pass too.
    await store.delete_notes(connection, ["Headings.md"])
    assert await connection.fetchval("SELECT sections FROM corpus_stats") == 0


async def test_parsable_text_splits_only_runs_of_a_hundred_characters(connection: asyncpg.Connection) -> None:
    parsable = "SELECT secondbrain_parsable($1)"
    prose = "A plain sentence, with https://example.org/a/path and snake_case_names, is left as it is."
    assert await connection.fetchval(parsable, prose) == prose
    assert await connection.fetchval(parsable, "x" * 99) == "x" * 99
    assert (
        await connection.fetchval(parsable, "é" * 250 + " end") == "é" * 100 + " " + "é" * 100 + " " + "é" * 50 + " end"
    )
