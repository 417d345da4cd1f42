"""The chat-model layer: one way to call, stream or swap a chat model, shared by ingest, retrieve and chat.

What it shares with embedders and the reranker (endpoints, failures, retrying) is in `secondbrain.providers`.
"""

from secondbrain.llm.base import ChatProvider
from secondbrain.llm.catalog import EXTRACTIVE, Choice, ProviderCatalog, ProviderOption
from secondbrain.llm.structured import complete, complete_json, extract_json
from secondbrain.llm.types import (
    ChatMessage,
    ChatRequest,
    SourcePassage,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = [
    "EXTRACTIVE",
    "ChatMessage",
    "ChatProvider",
    "ChatRequest",
    "Choice",
    "ProviderCatalog",
    "ProviderOption",
    "SourcePassage",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "complete",
    "complete_json",
    "extract_json",
]
