"""All of the chat service's SQL, in one place: one module per thing stored, each name re-exported here, so the
service reads `store.start_turn`, `store.ConversationRow` whatever module holds it.

What it keeps true: the settings are one row whose NULL columns mean "the default", so a changed default reaches an
install that never chose; a turn writes its user message and the assistant's placeholder in one transaction, so a
question is never stored without the row its answer goes into, and concurrent turns in one conversation keep each
question next to its answer (identity order is message order); every message write moves the conversation's
`updated_at`, which is what the list is ordered by. A transaction that locks a conversation and its messages locks
the conversation first, as a delete does (its row, then its messages by the cascade), so none deadlocks with a
delete. Every statement has a timeout.
"""

from secondbrain.chat.store.conversations import (
    CONVERSATION_COLUMNS,
    ConversationRow,
    create_conversation,
    delete_conversation,
    get_conversation,
    list_conversations,
    update_conversation,
)
from secondbrain.chat.store.messages import HistoryRow, MessageRow, list_messages, recent_history
from secondbrain.chat.store.personas import PersonaRow, conversation_persona, get_persona, list_personas
from secondbrain.chat.store.settings import SETTINGS_COLUMNS, SettingsRow, fetch_settings, update_settings
from secondbrain.chat.store.sql import STATEMENT_TIMEOUT
from secondbrain.chat.store.turns import close_abandoned_turns, finish_turn, keep_answer_alive, start_turn

__all__ = [
    "CONVERSATION_COLUMNS",
    "SETTINGS_COLUMNS",
    "STATEMENT_TIMEOUT",
    "ConversationRow",
    "HistoryRow",
    "MessageRow",
    "PersonaRow",
    "SettingsRow",
    "close_abandoned_turns",
    "conversation_persona",
    "create_conversation",
    "delete_conversation",
    "fetch_settings",
    "finish_turn",
    "get_conversation",
    "get_persona",
    "keep_answer_alive",
    "list_conversations",
    "list_messages",
    "list_personas",
    "recent_history",
    "start_turn",
    "update_conversation",
    "update_settings",
]
