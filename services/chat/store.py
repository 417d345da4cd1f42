"""All of the chat service's SQL, in one place.

What it keeps true: the settings are one row whose NULL columns mean "the default", so a changed default reaches an
install that never chose; a turn writes its user message and the assistant's placeholder in one transaction, so a
question is never stored without the row its answer goes into, and concurrent turns in one conversation keep each
question next to its answer (identity order is message order); every message write moves the conversation's
`updated_at`, which is what the list is ordered by. A transaction that locks a conversation and its messages locks
the conversation first, as a delete does (its row, then its messages by the cascade), so none deadlocks with a
delete. Every statement has a timeout.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

# Seconds any one statement may take; the chat's queries are all by primary key or a small index range.
STATEMENT_TIMEOUT = 10.0

# The columns of chat_settings a person can set, in the order of the API's Settings message.
SETTINGS_COLUMNS = (
    "provider", "model", "persona_id", "system_prompt", "passages", "alternates", "rerank", "rerank_model",
)  # fmt: skip


@dataclass(frozen=True)
class SettingsRow:
    """The stored settings; None is "the default" (resolved in settings.py, never here)."""

    provider: str | None = None
    model: str | None = None
    persona_id: str | None = None
    system_prompt: str | None = None
    passages: int | None = None
    alternates: bool | None = None
    rerank: bool | None = None
    rerank_model: str | None = None


@dataclass(frozen=True)
class PersonaRow:
    id: str
    name: str
    role: str
    source: str
    definition: str


@dataclass(frozen=True)
class ConversationRow:
    id: uuid.UUID
    title: str
    persona_id: str | None
    created_at: datetime
    updated_at: datetime
    message_count: int


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


# -- settings -----------------------------------------------------------------------------------------------------


def _settings(row: asyncpg.Record | None) -> SettingsRow:
    if row is None:  # the migration inserts the row; a database someone emptied by hand still reads as defaults
        return SettingsRow()
    return SettingsRow(**{column: row[column] for column in SETTINGS_COLUMNS})


async def fetch_settings(connection: asyncpg.Connection, *, for_update: bool = False) -> SettingsRow:
    """The settings row; `for_update` locks it until the transaction ends, so two updates do not interleave."""
    lock = " FOR UPDATE" if for_update else ""
    row = await connection.fetchrow(
        f"SELECT {', '.join(SETTINGS_COLUMNS)} FROM chat_settings WHERE singleton{lock}", timeout=STATEMENT_TIMEOUT
    )
    return _settings(row)


async def update_settings(connection: asyncpg.Connection, changes: Mapping[str, Any]) -> SettingsRow:
    """Set the given columns (None stores NULL, "the default") and return the row."""
    unknown = set(changes) - set(SETTINGS_COLUMNS)
    if unknown:  # column names are interpolated below, so only the known ones may pass
        raise ValueError(f"not settings columns: {sorted(unknown)}")
    columns = list(changes)
    assignments = ", ".join(f"{column} = ${i}" for i, column in enumerate(columns, start=1))
    row = await connection.fetchrow(
        f"""
        INSERT INTO chat_settings (singleton) VALUES (true)
        ON CONFLICT (singleton) DO UPDATE SET {assignments + ", " if assignments else ""}updated_at = now()
        RETURNING {", ".join(SETTINGS_COLUMNS)}
        """,
        *(changes[column] for column in columns),
        timeout=STATEMENT_TIMEOUT,
    )
    return _settings(row)


# -- personas -----------------------------------------------------------------------------------------------------


def _persona(row: asyncpg.Record) -> PersonaRow:
    return PersonaRow(row["id"], row["name"], row["role"], row["source"], row["definition"])


async def personas(connection: asyncpg.Connection) -> list[PersonaRow]:
    """Every persona: the built-in assistant first, then the rest by name."""
    rows = await connection.fetch(
        """
        SELECT id, name, role, source, definition FROM personas
        ORDER BY id = 'assistant' DESC, lower(name), id
        """,
        timeout=STATEMENT_TIMEOUT,
    )
    return [_persona(row) for row in rows]


async def persona(connection: asyncpg.Connection, persona_id: str) -> PersonaRow | None:
    row = await connection.fetchrow(
        "SELECT id, name, role, source, definition FROM personas WHERE id = $1", persona_id, timeout=STATEMENT_TIMEOUT
    )
    return _persona(row) if row is not None else None


async def conversation_persona(connection: asyncpg.Connection, conversation_id: uuid.UUID) -> PersonaRow | None:
    """The persona a conversation answers as; None for the default assistant (or one since removed)."""
    row = await connection.fetchrow(
        """
        SELECT p.id, p.name, p.role, p.source, p.definition
        FROM chat_conversations c JOIN personas p ON p.id = c.persona_id WHERE c.id = $1
        """,
        conversation_id,
        timeout=STATEMENT_TIMEOUT,
    )
    return _persona(row) if row is not None else None


# -- conversations --------------------------------------------------------------------------------------------------

_CONVERSATION_COLUMNS = """
    c.id, c.title, c.persona_id, c.created_at, c.updated_at,
    (SELECT count(*) FROM chat_messages m WHERE m.conversation_id = c.id)::int AS message_count
"""


def _conversation(row: asyncpg.Record) -> ConversationRow:
    return ConversationRow(
        row["id"], row["title"], row["persona_id"], row["created_at"], row["updated_at"], row["message_count"]
    )


async def list_conversations(
    connection: asyncpg.Connection, limit: int, after: tuple[datetime, uuid.UUID] | None
) -> list[ConversationRow]:
    """Up to `limit` conversations, most recently updated first, starting after the keyset `after`.

    The order (updated_at DESC, id ASC) is the index's, so a page is an index range scan however deep it is, and a
    conversation created or deleted between pages neither repeats nor skips another.
    """
    if after is None:
        rows = await connection.fetch(
            f"SELECT {_CONVERSATION_COLUMNS} FROM chat_conversations c ORDER BY c.updated_at DESC, c.id LIMIT $1",
            limit,
            timeout=STATEMENT_TIMEOUT,
        )
    else:
        rows = await connection.fetch(
            f"""
            SELECT {_CONVERSATION_COLUMNS} FROM chat_conversations c
            WHERE c.updated_at < $2 OR (c.updated_at = $2 AND c.id > $3)
            ORDER BY c.updated_at DESC, c.id LIMIT $1
            """,
            limit,
            *after,
            timeout=STATEMENT_TIMEOUT,
        )
    return [_conversation(row) for row in rows]


async def create_conversation(connection: asyncpg.Connection, title: str, persona_id: str | None) -> ConversationRow:
    row = await connection.fetchrow(
        f"""
        WITH c AS (INSERT INTO chat_conversations (title, persona_id) VALUES ($1, $2) RETURNING *)
        SELECT {_CONVERSATION_COLUMNS} FROM c
        """,
        title,
        persona_id,
        timeout=STATEMENT_TIMEOUT,
    )
    return _conversation(row)


async def get_conversation(connection: asyncpg.Connection, conversation_id: uuid.UUID) -> ConversationRow | None:
    row = await connection.fetchrow(
        f"SELECT {_CONVERSATION_COLUMNS} FROM chat_conversations c WHERE c.id = $1",
        conversation_id,
        timeout=STATEMENT_TIMEOUT,
    )
    return _conversation(row) if row is not None else None


async def update_conversation(
    connection: asyncpg.Connection, conversation_id: uuid.UUID, changes: Mapping[str, Any]
) -> ConversationRow | None:
    """Set `title` and/or `persona_id`; None when there is no such conversation."""
    columns = [column for column in ("title", "persona_id") if column in changes]
    if len(columns) != len(changes):
        raise ValueError(f"not conversation columns: {sorted(set(changes) - set(columns))}")
    assignments = "".join(f"{column} = ${i}, " for i, column in enumerate(columns, start=2))
    row = await connection.fetchrow(
        f"""
        WITH c AS (
            UPDATE chat_conversations SET {assignments}updated_at = now() WHERE id = $1 RETURNING *
        )
        SELECT {_CONVERSATION_COLUMNS} FROM c
        """,
        conversation_id,
        *(changes[column] for column in columns),
        timeout=STATEMENT_TIMEOUT,
    )
    return _conversation(row) if row is not None else None


async def delete_conversation(connection: asyncpg.Connection, conversation_id: uuid.UUID) -> bool:
    """Delete a conversation; its messages go with it (ON DELETE CASCADE). False when there was none."""
    status = await connection.execute(
        "DELETE FROM chat_conversations WHERE id = $1", conversation_id, timeout=STATEMENT_TIMEOUT
    )
    return status != "DELETE 0"


# -- messages -------------------------------------------------------------------------------------------------------


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


async def messages(connection: asyncpg.Connection, conversation_id: uuid.UUID) -> list[MessageRow]:
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
