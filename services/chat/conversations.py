"""Conversations: list (newest first, by keyset pages, or those holding some words), create, read with messages,
export as a note, rename, delete.

A page token is the keyset of the last conversation on the page (its updated_at and id), opaque to clients. Unlike
an offset, it stays correct when conversations are added or removed between pages, and costs the same on page 50
as on page 1.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from secondbrain.chat import store
from secondbrain.chat.export import Exported, export_conversation
from secondbrain.chat.settings import MAX_NAME_CHARS, ChatSettings
from secondbrain.chat.turn_input import parse_conversation_id
from secondbrain.db import Database
from secondbrain.errors import InvalidInput, NotFound

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
MAX_TITLE_CHARS = 200
# A search of the conversations: words a person types into a search box, not a document.
MAX_QUERY_CHARS = 200
MAX_QUERY_WORDS = 10
UPDATABLE = store.CONVERSATION_COLUMNS
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Conversation:
    row: store.ConversationRow
    messages: list[store.MessageRow]


@dataclass(frozen=True)
class Page:
    conversations: list[store.ConversationRow]
    next_page_token: str


def encode_token(row: store.ConversationRow) -> str:
    # Integer microseconds: a float timestamp would lose the precision the keyset compares on.
    micros = (row.updated_at - EPOCH) // timedelta(microseconds=1)
    return base64.urlsafe_b64encode(f"{micros}:{row.id}".encode()).decode().rstrip("=")


def decode_token(token: str) -> tuple[datetime, uuid.UUID]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        micros, identifier = raw.split(":", 1)
        return EPOCH + timedelta(microseconds=int(micros)), uuid.UUID(identifier)
    except (ValueError, binascii.Error, UnicodeDecodeError, OverflowError):
        raise InvalidInput("page_token is not one this server gave out: start again from the first page") from None


def _title(value: str) -> str:
    title = " ".join(value.split())
    if len(title) > MAX_TITLE_CHARS:
        raise InvalidInput(f"the title is {len(title)} characters long; keep it under {MAX_TITLE_CHARS}")
    return title


def _query_words(query: str) -> list[str]:
    """The distinct words of a conversation search, each to be found (case-insensitive) in a title or a message."""
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(
            f"the query is {len(query)} characters long; a search of the conversations takes up to {MAX_QUERY_CHARS}"
        )
    # (ILIKE compares without case, so a word typed twice in two cases is one word.)
    words = list({word.lower(): word for word in query.split()}.values())
    if len(words) > MAX_QUERY_WORDS:
        raise InvalidInput(
            f"the query has {len(words)} words; a search of the conversations takes up to {MAX_QUERY_WORDS}"
        )
    return words


class Conversations:
    def __init__(self, db: Database, settings: ChatSettings) -> None:
        self.db = db
        self.settings = settings

    async def _persona(self, persona_id: str) -> str | None:
        """A persona id to store: None for the default assistant, else one that exists."""
        persona_id = persona_id.strip()
        if len(persona_id) > MAX_NAME_CHARS:
            raise InvalidInput(f"persona_id is {len(persona_id)} characters long; keep it under {MAX_NAME_CHARS}")
        if not persona_id:
            return None
        await self.settings.check_persona(persona_id)
        return persona_id

    async def list(self, page_size: int, page_token: str, query: str = "") -> Page:
        """A page of conversations, newest first; with `query`, those whose title or messages hold all its words
        (the page token of such a page goes on with the same query)."""
        if page_size < 0:
            raise InvalidInput(f"page_size is {page_size}: give a positive number, or 0 for {DEFAULT_PAGE_SIZE}")
        size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        after = decode_token(page_token) if page_token else None
        words = _query_words(query)
        async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
            # One more than the page: whether there is a next page is known without a count.
            rows = await store.list_conversations(connection, size + 1, after, words)
        page, more = rows[:size], len(rows) > size
        return Page(page, encode_token(page[-1]) if more else "")

    async def create(self, title: str, persona_id: str) -> store.ConversationRow:
        """A new, empty conversation; without a persona it takes the settings' one (fixed from then on)."""
        chosen = await self._persona(persona_id) if persona_id.strip() else (await self.settings.get()).persona_id
        async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
            return await store.create_conversation(connection, _title(title), chosen or None)

    async def get(self, conversation_id: str) -> Conversation:
        identifier = parse_conversation_id(conversation_id)
        async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
            row = await store.get_conversation(connection, identifier)
            if row is None:
                raise NotFound(f"there is no conversation {conversation_id}")
            return Conversation(row, await store.list_messages(connection, identifier))

    async def export(self, conversation_id: str) -> Exported:
        """The conversation as a markdown note (`secondbrain.chat.export`)."""
        found = await self.get(conversation_id)
        return export_conversation(found.row, found.messages)

    async def update(
        self, conversation_id: str, title: str, persona_id: str, fields: Collection[str]
    ) -> store.ConversationRow:
        """Rename a conversation or change its persona; `fields` names which (empty: both)."""
        identifier = parse_conversation_id(conversation_id)
        names = list(dict.fromkeys(fields)) or list(UPDATABLE)
        unknown = [name for name in names if name not in UPDATABLE]
        if unknown:
            raise InvalidInput(f"update_mask names {', '.join(unknown)}; a conversation's fields: title, persona_id")
        changes: dict[str, str | None] = {}
        if "title" in names:
            changes["title"] = _title(title)
        if "persona_id" in names:
            changes["persona_id"] = await self._persona(persona_id)
        async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
            row = await store.update_conversation(connection, identifier, changes)
        if row is None:
            raise NotFound(f"there is no conversation {conversation_id}")
        return row

    async def delete(self, conversation_id: str) -> None:
        identifier = parse_conversation_id(conversation_id)
        async with self.db.pool.acquire(timeout=store.STATEMENT_TIMEOUT) as connection:
            if not await store.delete_conversation(connection, identifier):
                raise NotFound(f"there is no conversation {conversation_id}")
