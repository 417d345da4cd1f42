"""`like_escape`: a LIKE pattern built from text a person typed matches that text literally, on the real server."""

from __future__ import annotations

import asyncpg
import pytest

from secondbrain.db.sql import like_escape


@pytest.mark.parametrize(
    ("prefix", "matches", "does_not_match"),
    [
        ("100%", "100%/plan.md", "1000/plan.md"),
        ("a_b", "a_b/note.md", "axb/note.md"),
        ("C:\\notes", "C:\\notes/x.md", "C:notes/x.md"),
    ],
)
async def test_a_prefix_matches_itself_and_nothing_its_wildcards_would(
    empty_database: str, prefix: str, matches: str, does_not_match: str
) -> None:
    connection = await asyncpg.connect(empty_database)
    try:
        pattern = like_escape(prefix) + "%"
        assert await connection.fetchval("SELECT $1 LIKE $2", matches, pattern) is True
        assert await connection.fetchval("SELECT $1 LIKE $2", does_not_match, pattern) is False
    finally:
        await connection.close()
