"""A turn's two writes: its question with the answer's placeholder, then the answer; the placeholder's lease while
the answer is written; and the sweep of answers a stopped process left pending. Each transaction that locks a
conversation and its messages locks the conversation first, as a delete does, so none deadlocks with one."""

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
    is pending with `placeholder_error` until `finish_turn` fills it, under a lease the turn renews
    (`keep_answer_alive`), so a service that dies mid-answer leaves an honest record rather than nothing, closed
    once the lease runs out.
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
            INSERT INTO chat_messages (conversation_id, role, content, status, error, alive_at)
            VALUES ($1, 'user', $2, 'complete', '', NULL), ($1, 'assistant', '', 'pending', $3, now())
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


async def close_abandoned_turns(connection: asyncpg.Connection, lease_seconds: float, error: str) -> int:
    """Mark answers whose lease ran out `lease_seconds` ago incomplete with `error`, keeping the text they had:
    whatever was writing them stopped (a chat process killed mid-answer). Returns how many were closed. (A row
    written before leases has none: its creation time stands in.)

    Their conversations are locked first, as a delete locks them, so the sweep never deadlocks with one.
    """
    async with connection.transaction():
        await connection.execute(
            """
            SELECT 1 FROM chat_conversations WHERE id IN (
                SELECT conversation_id FROM chat_messages
                WHERE status = 'pending' AND coalesce(alive_at, created_at) < now() - make_interval(secs => $1)
            ) ORDER BY id FOR NO KEY UPDATE
            """,
            lease_seconds,
            timeout=STATEMENT_TIMEOUT,
        )
        status = await connection.execute(
            """
            UPDATE chat_messages SET status = 'incomplete', error = $2
            WHERE status = 'pending' AND coalesce(alive_at, created_at) < now() - make_interval(secs => $1)
            """,
            lease_seconds,
            error,
            timeout=STATEMENT_TIMEOUT,
        )
    return int(status.split()[-1])


async def keep_answer_alive(connection: asyncpg.Connection, message_id: int, text: str | None) -> bool:
    """Renew the lease of a turn's answer row and, unless `text` is None, store the text streamed so far (kept if
    the process dies before the turn ends); False when the row is gone (its conversation was deleted, by any chat
    process). One statement on the message's row alone, so it waits on no conversation lock."""
    found = await connection.fetchval(
        """
        UPDATE chat_messages SET alive_at = now(),
            content = CASE WHEN $2::text IS NOT NULL AND status = 'pending' THEN $2::text ELSE content END
        WHERE id = $1 RETURNING true
        """,
        message_id,
        text,
        timeout=STATEMENT_TIMEOUT,
    )
    return bool(found)
