"""What a chat model is asked and what it streams back, independent of any vendor."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: its name, a description written for the model, and the JSON schema of its
    arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """The model calls a tool (a stream event, after the text), or called one (on an assistant message). The
    arguments are the model's JSON text, as it wrote it: checking them is the tool's business, and a model that
    wrote bad JSON gets a tool error back rather than a failed turn."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatMessage:
    """A message of the conversation. An assistant message may carry the tool calls it made; a `tool` message is
    one call's result, for `tool_call_id`."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""


@dataclass(frozen=True)
class SourcePassage:
    """A numbered passage the answer may cite as [number]. LLM providers read passages from the prompt; the
    extractive provider, which has no model, reads them from here."""

    number: int
    text: str
    title: str = ""
    # The note's path in the vault: the extractive provider quotes a note about the vault itself (its root README)
    # only when nothing else matches.
    path: str = ""
    # The passage's last day (YYYY-MM-DD) when the note itself dates it (its name, front matter or a dated heading),
    # never its file's modification time; "" otherwise. Of two dated statements alike, the later is quoted.
    date: str = ""
    # The headings the passage's first line sits under, outermost first (the Passage's heading_path): its text
    # starts below them, so the first section's dated heading ("2026-10-06" in a running log) is read from here.
    headings: tuple[str, ...] = ()
    # Where the note's date was read (`secondbrain.date_sources`): a note dated by its file name or front matter dates
    # all of its text; one dated by its headings dates only what sits under a dated heading.
    date_source: str = ""
    # The passage's days as retrieval gives them: its `date`, or a span ("2026-01-19..2026-01-25", a weekly note).
    days: str = ""


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: Sequence[ChatMessage]
    system: str = ""
    max_tokens: int = 1024
    temperature: float | None = None
    passages: Sequence[SourcePassage] = field(default_factory=tuple)
    # Whether, of two passages the notes date that say the same, the later counts for more (the quoting provider
    # quotes it): not when the search was kept to days the asker named, where those days decide.
    later_first: bool = True
    # The asker's day (YYYY-MM-DD; "" unknown): a statement dated after it is a plan, never the latest word on a fact.
    today: str = ""
    # Tools the model may call; none means a plain answer.
    tools: Sequence[ToolSpec] = field(default_factory=tuple)
    # "none" keeps the tools on offer (a conversation holding tool calls needs them, for some vendors) but asks for
    # an answer in text: the last step of a tool loop.
    tool_choice: Literal["auto", "none"] = "auto"

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


StreamEvent = TextDelta | ToolCall | Usage
