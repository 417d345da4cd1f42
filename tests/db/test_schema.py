"""The schema does what retrieval and chat rely on: cascades, the generated tsvector, the per-dimension HNSW index."""

from __future__ import annotations

import asyncpg
import numpy as np
import pytest


async def _note(connection: asyncpg.Connection, path: str = "Projects/Plan.md") -> int:
    return await connection.fetchval(
        "INSERT INTO vault_files (path, title, body, content_hash) VALUES ($1, 'Plan', 'body', 'h') RETURNING id", path
    )


async def _chunk(connection: asyncpg.Connection, file_id: int, index: int, content: str, embedding: np.ndarray) -> None:
    await connection.execute(
        """
        INSERT INTO vault_chunks
            (file_id, chunk_index, start_line, end_line, content, context, token_count, embedding)
        VALUES ($1, $2, 1, 2, $3, 'from the project plan', 5, $4)
        """,
        file_id,
        index,
        content,
        embedding,
    )


async def test_deleting_a_note_deletes_its_chunks_and_links(connection: asyncpg.Connection) -> None:
    file_id = await _note(connection)
    await _chunk(connection, file_id, 0, "Plan > Goals\n\nWe chose option B.", np.ones(384, dtype=np.float32))
    await connection.execute(
        "INSERT INTO vault_links (file_id, ordinal, target, line) VALUES ($1, 0, 'Other', 3)", file_id
    )
    await connection.execute("DELETE FROM vault_files WHERE id = $1", file_id)
    assert await connection.fetchval("SELECT count(*) FROM vault_chunks") == 0
    assert await connection.fetchval("SELECT count(*) FROM vault_links") == 0


async def test_tsv_covers_context_and_content(connection: asyncpg.Connection) -> None:
    file_id = await _note(connection)
    await _chunk(connection, file_id, 0, "We chose option B.", np.ones(384, dtype=np.float32))
    matches = await connection.fetchval(
        "SELECT count(*) FROM vault_chunks WHERE tsv @@ to_tsquery('english', 'project & option')"
    )
    assert matches == 1


async def test_vector_search_uses_the_hnsw_index_of_the_models_dimension(connection: asyncpg.Connection) -> None:
    file_id = await _note(connection)
    rng = np.random.default_rng(7)
    for index in range(50):
        await _chunk(connection, file_id, index, f"chunk {index}", rng.random(384, dtype=np.float32))
    # A vector of another model's dimension may sit in the same column without breaking the query.
    other = await _note(connection, "Other.md")
    await _chunk(connection, other, 0, "old model", rng.random(1024, dtype=np.float32))
    async with connection.transaction():
        await connection.execute("SET LOCAL enable_seqscan = off")
        await connection.execute("SET LOCAL hnsw.ef_search = 100")
        query = rng.random(384, dtype=np.float32)
        sql = """SELECT chunk_index FROM vault_chunks WHERE vector_dims(embedding) = 384
                 ORDER BY embedding::vector(384) <=> $1::vector(384) LIMIT 5"""
        plan = "\n".join(row[0] for row in await connection.fetch("EXPLAIN " + sql, query))
        assert "vault_chunks_embedding_384_idx" in plan
        rows = await connection.fetch(sql, query)
    assert len(rows) == 5


async def test_settings_row_and_default_persona_exist(connection: asyncpg.Connection) -> None:
    assert await connection.fetchval("SELECT count(*) FROM chat_settings") == 1
    assert await connection.fetchval("SELECT name FROM personas WHERE id = 'assistant'") == "Assistant"
    with pytest.raises(asyncpg.UniqueViolationError):
        await connection.execute("INSERT INTO chat_settings (singleton) VALUES (true)")
