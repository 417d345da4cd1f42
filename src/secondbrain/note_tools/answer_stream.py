"""A turn's events (ChatService.SendMessage or Answer) read into what they brought: the answer's text, every passage
it may cite (the sources' and, in agent mode, those the tools added), its usage, or its error. One reader for every
client of the stream that wants the whole answer: the `ask` tool, the OpenAI-compatible endpoint, `eval --answers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.note_tools import formatting
from secondbrain.v1 import retrieval_pb2 as common


@dataclass
class AnswerStream:
    """What a turn's events have brought so far, for both the whole answer and a stream."""

    parts: list[str] = field(default_factory=list)
    passages: list[common.Passage] = field(default_factory=list)
    usage: pb.Usage = field(default_factory=pb.Usage)

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def take(self, event: Any) -> pb.ErrorEvent | None:
        """Record `event` (a SendMessage or Answer event); the error event when it is one."""
        kind = event.WhichOneof("event")
        if kind == "sources":
            self.passages = list(event.sources.retrieval.passages)
        elif kind == "tool_result":  # an agent turn's tools add passages the answer may cite
            self.passages += event.tool_result.passages
        elif kind == "delta":
            self.parts.append(event.delta.text)
        elif kind == "done":
            self.usage = event.done.usage
        elif kind == "error":
            return event.error
        return None

    def cited(self) -> tuple[str, list[common.Passage]]:
        """The text with citations of missing passages stripped, and the passages it cites (all when none)."""
        return formatting.cited(self.text, self.passages)
