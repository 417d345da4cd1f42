"""The provider layer: one way to call, stream or swap a chat model, shared by ingest, retrieve and chat."""

from secondbrain.llm.base import ChatProvider, RetryPolicy
from secondbrain.llm.catalog import EXTRACTIVE, Choice, ProviderCatalog, ProviderOption
from secondbrain.llm.structured import complete, complete_json, extract_json
from secondbrain.llm.types import ChatMessage, ChatRequest, SourcePassage, StreamEvent, TextDelta, Usage

__all__ = [
    "EXTRACTIVE",
    "ChatMessage",
    "ChatProvider",
    "ChatRequest",
    "Choice",
    "ProviderCatalog",
    "ProviderOption",
    "RetryPolicy",
    "SourcePassage",
    "StreamEvent",
    "TextDelta",
    "Usage",
    "complete",
    "complete_json",
    "extract_json",
]
