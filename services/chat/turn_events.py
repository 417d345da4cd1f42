"""What a chat turn says, in order: `Sources` first, in agent mode the tool steps, `Delta`s as the answer arrives,
then `Done`, or `Error` in place of whatever could not happen. Domain events: the servicer maps each to the stream's
proto event, one to one."""

from __future__ import annotations

from dataclasses import dataclass

from secondbrain.chat.agent import ToolAnswered, ToolCalled
from secondbrain.errors import SecondbrainError
from secondbrain.llm import Usage
from secondbrain.v1 import retrieval_pb2 as common


@dataclass(frozen=True)
class Sources:
    """Always the first event: what the answer will read."""

    # None for a turn that is not stored (`Turns.answer`), as in Done and Error.
    user_message_id: int | None
    retrieval: common.RetrievalResult
    mode: str = "rag"
    # Why the turn runs as rag when agent mode was asked for.
    mode_reason: str = ""


@dataclass(frozen=True)
class Delta:
    text: str


@dataclass(frozen=True)
class Done:
    """The last event of a turn that finished. Timings in ms: retrieval, first_token (from the request), total."""

    message_id: int | None
    usage: Usage
    timings: list[tuple[str, float]]
    provider: str
    model: str
    cited: list[int]
    agent_stop_reason: str = ""


@dataclass(frozen=True)
class Error:
    """The last event of a turn that failed after its question was stored."""

    error: SecondbrainError
    message_id: int | None


TurnEvent = Sources | ToolCalled | ToolAnswered | Delta | Done | Error
