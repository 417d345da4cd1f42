"""Short, non-streaming calls that want JSON back (condensing a question, writing chunk context).

Models often wrap JSON in a code fence or a sentence of prose; `extract_json` finds it anyway.
"""

from __future__ import annotations

import json
import re
from typing import Any

from secondbrain.errors import Unavailable
from secondbrain.llm.base import ChatProvider
from secondbrain.llm.types import ChatRequest, TextDelta, Usage

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


class MalformedReply(Unavailable):
    """The model answered, but not with the JSON that was asked for."""


async def complete(provider: ChatProvider, request: ChatRequest) -> tuple[str, Usage]:
    """The whole reply to `request`, joined, and its usage."""
    parts: list[str] = []
    usage: Usage | None = None
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            parts.append(event.text)
        elif isinstance(event, Usage):
            usage = event
    assert usage is not None  # ChatProvider.stream ends with a Usage or raises
    return "".join(parts), usage


def extract_json(text: str) -> Any:
    """The JSON value in `text`: the whole text, a fenced block, or the first object or array inside prose."""
    candidates = [text.strip(), *(match.strip() for match in _FENCE.findall(text))]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            pass
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char in "{[":
            try:
                value, _ = decoder.raw_decode(text, start)
            except ValueError:
                continue
            return value
    raise MalformedReply(f"the model's reply contained no JSON: {text[:200]!r}")


async def complete_json(provider: ChatProvider, request: ChatRequest) -> tuple[Any, Usage]:
    text, usage = await complete(provider, request)
    return extract_json(text), usage
