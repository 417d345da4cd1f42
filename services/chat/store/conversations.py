"""Conversations: listed by keyset pages in the order of their index, created, read, changed and deleted."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from secondbrain.chat.store.sql import STATEMENT_TIMEOUT, set_clause
from secondbrain.db.sql import like_escape

# Enough of the first answer for its gist after the quoting provider's preamble and quote marks are taken out.
FIRST_ANSWER_CHARS = 1_000
# The columns of chat_conversations a person can change.
CONVERSATION_COLUMNS = ("title", "persona_id")


@dataclass(frozen=True)
class ConversationRow:
    id: uuid.UUID
    title: str
    persona_id: str | None
    created_at: datetime
    updated_at: datetime
    message_count: int
    # The start of its first answer, as written (the list shows its gist); '' before one is written.
    first_answer: str = ""


_CONVERSATION_SELECT = f"""
    c.id, c.title, c.persona_id, c.created_at, c.updated_at,
    (SELECT count(*) FROM chat_messages m WHERE m.conversation_id = c.id)::int AS message_count,
    (SELECT left(m.content, {FIRST_ANSWER_CHARS}) FROM chat_messages m
     WHERE m.conversation_id = c.id AND m.role = 'assistant' AND m.content <> '' ORDER BY m.id LIMIT 1) AS first_answer
"""


def _conversation(row: asyncpg.Record) -> ConversationRow:
    return ConversationRow(
        row["id"],
        row["title"],
        row["persona_id"],
        row["created_at"],
        row["updated_at"],
        row["message_count"],
        row["first_answer"] or "",
    )


async def list_conversations(
    connection: asyncpg.Connection,
    limit: int,
    after: tuple[datetime, uuid.UUID] | None,
    words: Sequence[str] = (),
) -> list[ConversationRow]:
    """Up to `limit` conversations, most recently updated first, starting after the keyset `after`; with `words`,
    only those whose title or some message contains every one of them (case-insensitive, anywhere in a word).

    The order (updated_at DESC, id ASC) is the index's, so a page is an index range scan however deep it is, and a
    conversation created or deleted between pages neither repeats nor skips another. A search reads the messages of
    the conversations it passes on the way (each by its conversation's index), bounded by the statement timeout and
    the caller's limits on the words.
    """
    values: list[Any] = [limit]
    clauses: list[str] = []
    if after is not None:
        values.extend(after)
        clauses.append("(c.updated_at < $2 OR (c.updated_at = $2 AND c.id > $3))")
    for word in words:
        values.append(f"%{like_escape(word)}%")
        n = len(values)
        clauses.append(
            f"(c.title ILIKE ${n} OR EXISTS (SELECT 1 FROM chat_messages m "
            f"WHERE m.conversation_id = c.id AND m.content ILIKE ${n}))"
        )
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = await connection.fetch(
        f"SELECT {_CONVERSATION_SELECT} FROM chat_conversations c {where} ORDER BY c.updated_at DESC, c.id LIMIT $1",
        *values,
        timeout=STATEMENT_TIMEOUT,
    )
    return [_conversation(row) for row in rows]


async def create_conversation(connection: asyncpg.Connection, title: str, persona_id: str | None) -> ConversationRow:
    row = await connection.fetchrow(
        f"""
        WITH c AS (INSERT INTO chat_conversations (title, persona_id) VALUES ($1, $2) RETURNING *)
        SELECT {_CONVERSATION_SELECT} FROM c
        """,
        title,
        persona_id,
        timeout=STATEMENT_TIMEOUT,
    )
    return _conversation(row)


async def get_conversation(connection: asyncpg.Connection, conversation_id: uuid.UUID) -> ConversationRow | None:
    row = await connection.fetchrow(
        f"SELECT {_CONVERSATION_SELECT} FROM chat_conversations c WHERE c.id = $1",
        conversation_id,
        timeout=STATEMENT_TIMEOUT,
    )
    return _conversation(row) if row is not None else None


async def update_conversation(
    connection: asyncpg.Connection, conversation_id: uuid.UUID, changes: Mapping[str, Any]
) -> ConversationRow | None:
    """Set `title` and/or `persona_id`; None when there is no such conversation."""
    assignments, values = set_clause(changes, CONVERSATION_COLUMNS, 2, "conversation")
    row = await connection.fetchrow(
        f"""
        WITH c AS (
            UPDATE chat_conversations SET {assignments} WHERE id = $1 RETURNING *
        )
        SELECT {_CONVERSATION_SELECT} FROM c
        """,
        conversation_id,
        *values,
        timeout=STATEMENT_TIMEOUT,
    )
    return _conversation(row) if row is not None else None


async def delete_conversation(connection: asyncpg.Connection, conversation_id: uuid.UUID) -> bool:
    """Delete a conversation; its messages go with it (ON DELETE CASCADE). False when there was none."""
    status = await connection.execute(
        "DELETE FROM chat_conversations WHERE id = $1", conversation_id, timeout=STATEMENT_TIMEOUT
    )
    return status != "DELETE 0"
