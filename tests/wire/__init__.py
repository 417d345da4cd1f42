"""Local servers that speak paid APIs' wire protocols, so tests run the real vendor SDKs against 127.0.0.1.

Each server is an async context manager on port 0 with a `script` of replies, the `requests` it received and the
number of `disconnects` it saw; see `script.py` for what a reply can make a server do.
"""

from .anthropic_server import AnthropicServer
from .base import WireServer
from .ollama_server import OllamaServer
from .openai_server import OpenAIServer
from .rerank_server import RerankServer
from .script import RecordedRequest, Reply, Script, ToolCall
from .vectors import embed, overlap

__all__ = [
    "AnthropicServer",
    "OllamaServer",
    "OpenAIServer",
    "RecordedRequest",
    "Reply",
    "RerankServer",
    "Script",
    "ToolCall",
    "WireServer",
    "embed",
    "overlap",
]
