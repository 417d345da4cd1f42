"""A conversation's messages as they are read: whole (with sources) for a person, or as a turn's history."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from secondbrain.chat.store.sql import STATEMENT_TIMEOUT


@dataclass(frozen=True)
class MessageRow:
    id: int
    role: str
    content: str
    sources: dict[str, Any] | None
    provider: str
    model: str
    input_tokens: int | None
    output_tokens: int | None
    status: str
    error: str
    created_at: datetime


@dataclass(frozen=True)
class HistoryRow:
    """An earlier message as a turn reads it: no sources, which can be large."""

    role: str
    content: str


def _message(row: asyncpg.Record) -> MessageRow:
    sources = json.loads(row["sources"]) if row["sources"] is not None else None
    return MessageRow(
        id=row["id"],
        role=row["role"],
        content=row["content"],
        sources=sources,
        provider=row["provider"],
        model=row["model"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        status=row["status"],
        error=row["error"],
        created_at=row["created_at"],
    )


async def list_messages(connection: asyncpg.Connection, conversation_id: uuid.UUID) -> list[MessageRow]:
    """Every message of a conversation, oldest first, with its sources."""
    rows = await connection.fetch(
        """
        SELECT id, role, content, sources, provider, model, input_tokens, output_tokens, status, error, created_at
        FROM chat_messages WHERE conversation_id = $1 ORDER BY id
        """,
        conversation_id,
        timeout=STATEMENT_TIMEOUT,
    )
    return [_message(row) for row in rows]


async def recent_history(connection: asyncpg.Connection, conversation_id: uuid.UUID, limit: int) -> list[HistoryRow]:
    """The last `limit` messages with text, oldest first: what a turn may put in front of the model.

    Assistant rows with no text (a turn that failed before its answer began) carry nothing to remember.
    """
    rows = await connection.fetch(
        """
        SELECT role, content FROM (
            SELECT id, role, content FROM chat_messages
            WHERE conversation_id = $1 AND content <> ''
            ORDER BY id DESC LIMIT $2
        ) recent ORDER BY id
        """,
        conversation_id,
        limit,
        timeout=STATEMENT_TIMEOUT,
    )
    return [HistoryRow(row["role"], row["content"]) for row in rows]
