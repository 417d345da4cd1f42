"""A turn's two writes: its question with the answer's placeholder, then the answer; and the sweep of answers a
stopped process left pending. Each transaction that locks a conversation and its messages locks the conversation
first, as a delete does, so none deadlocks with one."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

import asyncpg

from secondbrain.chat.store.sql import STATEMENT_TIMEOUT


async def start_turn(
    connection: asyncpg.Connection, conversation_id: uuid.UUID, question: str, title: str, placeholder_error: str
) -> tuple[int, int] | None:
    """Store the question and the answer's placeholder in one transaction; name an untitled conversation `title`.

    Returns (user message id, assistant message id), or None when the conversation does not exist. The placeholder
    is pending with `placeholder_error` until `finish_turn` fills it, so a service that dies mid-answer leaves an
    honest record rather than nothing.
    """
    async with connection.transaction():
        found = await connection.fetchval(
            """
            UPDATE chat_conversations SET updated_at = now(), title = CASE WHEN title = '' THEN $2 ELSE title END
            WHERE id = $1 RETURNING id
            """,
            conversation_id,
            title,
            timeout=STATEMENT_TIMEOUT,
        )
        if found is None:
            return None
        ids = await connection.fetch(
            """
            INSERT INTO chat_messages (conversation_id, role, content, status, error)
            VALUES ($1, 'user', $2, 'complete', ''), ($1, 'assistant', '', 'pending', $3)
            RETURNING id
            """,
            conversation_id,
            question,
            placeholder_error,
            timeout=STATEMENT_TIMEOUT,
        )
    user_id, assistant_id = sorted(row["id"] for row in ids)
    return user_id, assistant_id


async def finish_turn(
    connection: asyncpg.Connection,
    message_id: int,
    *,
    content: str,
    sources: Mapping[str, Any] | None,
    provider: str,
    model: str,
    input_tokens: int | None,
    output_tokens: int | None,
    status: str,
    error: str,
) -> bool:
    """Fill the assistant's placeholder with what the turn produced, whole or not; False when it is gone (its
    conversation was deleted while it answered).

    Locks the conversation before the message, the order a delete takes them in (the conversation's row, then its
    messages by the cascade); the other order deadlocks with a delete that lands between the two.
    """
    async with connection.transaction():
        conversation_id = await connection.fetchval(
            """
            UPDATE chat_conversations SET updated_at = now()
            WHERE id = (SELECT conversation_id FROM chat_messages WHERE id = $1) RETURNING id
            """,
            message_id,
            timeout=STATEMENT_TIMEOUT,
        )
        if conversation_id is None:
            return False
        status = await connection.execute(
            """
            UPDATE chat_messages SET content = $2, sources = $3::jsonb, provider = $4, model = $5,
                input_tokens = $6, output_tokens = $7, status = $8, error = $9
            WHERE id = $1 AND role = 'assistant'
            """,
            message_id,
            content,
            json.dumps(sources) if sources is not None else None,
            provider,
            model,
            input_tokens,
            output_tokens,
            status,
            error,
            timeout=STATEMENT_TIMEOUT,
        )
    return status != "UPDATE 0"


async def close_abandoned_turns(connection: asyncpg.Connection, older_than_seconds: float, error: str) -> int:
    """Mark answers still pending after `older_than_seconds` incomplete with `error`: whatever was writing them
    stopped (a chat process killed mid-answer). Returns how many were closed.

    Their conversations are locked first, as a delete locks them, so the sweep never deadlocks with one.
    """
    async with connection.transaction():
        await connection.execute(
            """
            SELECT 1 FROM chat_conversations WHERE id IN (
                SELECT conversation_id FROM chat_messages
                WHERE status = 'pending' AND created_at < now() - make_interval(secs => $1)
            ) ORDER BY id FOR NO KEY UPDATE
            """,
            older_than_seconds,
            timeout=STATEMENT_TIMEOUT,
        )
        status = await connection.execute(
            """
            UPDATE chat_messages SET status = 'incomplete', error = $2
            WHERE status = 'pending' AND created_at < now() - make_interval(secs => $1)
            """,
            older_than_seconds,
            error,
            timeout=STATEMENT_TIMEOUT,
        )
    return int(status.split()[-1])


async def answer_exists(connection: asyncpg.Connection, message_id: int) -> bool:
    """Whether a turn's answer row is still there: gone when its conversation was deleted, by any chat process."""
    found = await connection.fetchval(
        "SELECT EXISTS (SELECT 1 FROM chat_messages WHERE id = $1)", message_id, timeout=STATEMENT_TIMEOUT
    )
    return bool(found)
