"""What a turn takes in, checked before anything is stored: the question, a caller's own history, a conversation
id, and the title a first question gives its conversation."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from secondbrain.errors import InvalidInput
from secondbrain.llm import ChatMessage

# The same bound the retrieve service puts on a query: a question longer than this is a paste, not a question.
MAX_QUESTION_CHARS = 8_000
# Earlier messages read from the database per turn (or taken from a caller that keeps its own history); the token
# budget then keeps the most recent that fit.
HISTORY_MESSAGES = 200
MAX_HISTORY_CHARS = 400_000
# A title made from a first question is cut this short (a title a person gives may be longer: conversations.py).
QUESTION_TITLE_CHARS = 60


def title_from(question: str) -> str:
    """A conversation's title from its first question: its first line, whitespace collapsed, cut at a word."""
    line = " ".join(question.strip().splitlines()[0].split()) if question.strip() else ""
    if len(line) <= QUESTION_TITLE_CHARS:
        return line
    cut = line[: QUESTION_TITLE_CHARS - 1].rsplit(" ", 1)[0] or line[: QUESTION_TITLE_CHARS - 1]
    return cut.rstrip(" ,;:") + "…"


def validate_question(content: str) -> str:
    text = content.strip()
    if not text:
        raise InvalidInput("the message is empty: type a question about your notes")
    if len(text) > MAX_QUESTION_CHARS:
        raise InvalidInput(f"the message is {len(text)} characters long; keep it under {MAX_QUESTION_CHARS}")
    return text


def validate_history(history: Sequence[ChatMessage]) -> list[ChatMessage]:
    """A caller's history, checked as a stored one would be: at most HISTORY_MESSAGES messages, each a user's or an
    assistant's, together at most MAX_HISTORY_CHARS characters."""
    if len(history) > HISTORY_MESSAGES:
        raise InvalidInput(f"the history has {len(history)} messages; send at most the last {HISTORY_MESSAGES}")
    if sum(len(message.content) for message in history) > MAX_HISTORY_CHARS:
        raise InvalidInput(f"the history is over {MAX_HISTORY_CHARS:,} characters; send fewer or shorter messages")
    for message in history:
        if message.role not in ("user", "assistant"):
            raise InvalidInput(f"a history message's role is {message.role!r}: it must be 'user' or 'assistant'")
    return list(history)


def parse_conversation_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise InvalidInput(f"{value!r} is not a conversation id (a UUID, as CreateConversation returns)") from None


@dataclass(frozen=True)
class Scope:
    """What narrows a turn's retrieval: folders, tags and a range of days (YYYY-MM-DD, either end open), and the
    asker's now (ISO 8601 with its offset), which a time in the question is read from. Checked by retrieve's rules
    (`servicer.scope_from`) before a turn starts."""

    folders: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    date_from: str = ""
    date_to: str = ""
    now: str = ""
    # The notes a turn is kept to ("ask about this note": the note and the notes it links to); empty: every note.
    notes: tuple[str, ...] = ()
    # The types of file a turn is kept to (note, pdf, image, ...); empty: every type.
    file_types: tuple[str, ...] = ()


# A turn with nothing narrowing it: every note, the server's clock.
WHOLE_VAULT = Scope()
