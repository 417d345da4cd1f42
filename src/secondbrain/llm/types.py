"""What a chat model is asked and what it streams back, independent of any vendor."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

Role = Literal["user", "assistant"]


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str


@dataclass(frozen=True)
class SourcePassage:
    """A numbered passage the answer may cite as [number]. LLM providers read passages from the prompt; the
    extractive provider, which has no model, reads them from here."""

    number: int
    text: str
    title: str = ""


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: Sequence[ChatMessage]
    system: str = ""
    max_tokens: int = 1024
    temperature: float | None = None
    passages: Sequence[SourcePassage] = field(default_factory=tuple)

    @property
    def question(self) -> str:
        """The latest user message."""
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer, to append to what came before."""

    text: str


@dataclass(frozen=True)
class Usage:
    """The last event of every successful stream."""

    input_tokens: int
    output_tokens: int
    stop_reason: str
    model: str


StreamEvent = TextDelta | Usage
