"""A request's conversation history, read from its protobuf messages into the domain's `ChatMessage`s: one reading
for every service that takes one (retrieve's `Retrieve`, chat's `Answer`), so both refuse the same bad input with the
same words."""

from __future__ import annotations

from collections.abc import Iterable

from secondbrain.errors import InvalidInput
from secondbrain.llm.types import ChatMessage
from secondbrain.service.convert import ROLE_WORDS
from secondbrain.v1 import retrieval_pb2 as common


def history_from(messages: Iterable[common.HistoryMessage]) -> list[ChatMessage]:
    """The earlier turns, oldest first; a message whose role is unset (or anything but a user's or an assistant's)
    is refused, naming its place."""
    history = []
    for position, message in enumerate(messages):
        if message.role not in ROLE_WORDS:
            raise InvalidInput(
                f"history[{position}].role must be MESSAGE_ROLE_USER or MESSAGE_ROLE_ASSISTANT ('user' or 'assistant')"
            )
        history.append(ChatMessage(ROLE_WORDS[message.role], message.content))  # type: ignore[arg-type]
    return history
