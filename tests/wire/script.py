"""The scripting model every wire server shares: what the next request gets, and what the server saw.

A test pushes `Reply`s before it drives a client; each request to a scripted route pops the next one, so a test can
script "429, then success" for a retry, or a stream that breaks after two deltas. With nothing pushed, every request
gets the default `Reply()`, so tests that do not care about the answer need no scripting at all.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any


def _default_deltas() -> list[str]:
    return ["Hello", ", ", "world", "."]


@dataclass
class ToolCall:
    """A tool the scripted model calls, after its text (if any). A stream sends the arguments' JSON in `pieces`
    parts, as models do, so a client must join them before parsing. `raw` replaces that JSON with text as it is (a
    model that writes broken JSON; OpenAI's wire only, as Anthropic's streams always end in an object)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    pieces: int = 3
    raw: str | None = None

    def json_text(self) -> str:
        return self.raw if self.raw is not None else json.dumps(self.arguments)

    def argument_pieces(self) -> list[str]:
        text = self.json_text()
        size = max(1, -(-len(text) // self.pieces))
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass
class Reply:
    """One scripted answer.

    `fail_after` and `drop_after` shape streams; a non-streaming answer has no middle, so `drop_after` (any value)
    closes the connection before a byte of the response is sent, and `fail_after` does not apply. `delay` is slept
    before each delta, also for a non-streaming chat answer (so it takes as long as the stream would); answers that
    have no deltas (embeddings, rerank) sleep it once.
    """

    deltas: list[str] = field(default_factory=_default_deltas)
    status: int = 200
    error_type: str | None = None
    error_message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    fail_after: int | None = None
    drop_after: int | None = None
    usage: tuple[int, int] = (12, 4)
    stop_reason: str | None = None
    # Tools the model calls after its text; then the stop reason is the protocol's for tool use, unless scripted.
    tool_calls: list[ToolCall] = field(default_factory=list)

    def call_id(self, index: int) -> str:
        call = self.tool_calls[index]
        return call.id or f"call_{index}_{call.name}"

    @property
    def text(self) -> str:
        """The whole answer, as a non-streaming response carries it."""
        return "".join(self.deltas)


class Script:
    """A FIFO of replies; when it is empty every request gets `default`."""

    def __init__(self, default: Reply | None = None) -> None:
        self.default = default if default is not None else Reply()
        self._queue: deque[Reply] = deque()

    def push(self, *replies: Reply) -> None:
        self._queue.extend(replies)

    def next(self) -> Reply:
        return self._queue.popleft() if self._queue else self.default

    def __len__(self) -> int:
        return len(self._queue)


@dataclass
class RecordedRequest:
    """A request as the server received it; `headers` has lower-case names, `json` is None for a non-JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any
