"""Ollama's native embeddings API, with its OpenAI-compatible API under /v1 on the same port.

A real Ollama serves both, so this server is an `OpenAIServer` (its handlers, not copies of them) plus the native
routes. Native errors are Ollama's `{"error": "..."}`; the /v1 routes answer OpenAI's shape. `/api/embed` truncates
long inputs unless the request says `"truncate": false`, as Ollama does, so `max_input_tokens` only fails those.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from .base import json_body, scripted_error
from .openai_server import OpenAIServer
from .script import Reply
from .vectors import DEFAULT_DIMENSIONS, count_tokens, embed

DEFAULT_MODELS = ("nomic-embed-text:latest", "llama3.2:latest")


def ollama_error(reply: Reply) -> dict[str, Any]:
    return {"error": reply.error_message}


def _model_entry(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "model": name,
        "modified_at": "2025-01-01T00:00:00Z",
        "size": 274302450,
        "digest": hashlib.sha256(name.encode()).hexdigest(),
        "details": {"format": "gguf", "family": name.split(":")[0], "parameter_size": "137M"},
    }


class OllamaServer(OpenAIServer):
    """`POST /api/embed`, `POST /api/embeddings` (legacy), `GET /api/tags`, and OpenAI's routes under `/v1`.

    `base_url` is the root, as Ollama clients take it; `openai_base_url` is the root plus `/v1` for the openai SDK.
    `models` are the names `/api/tags` lists; that route is not scripted, so a `Reply` pushed for an embedding
    request is not spent by a client listing models first.
    """

    def __init__(
        self,
        *,
        dimensions: int = DEFAULT_DIMENSIONS,
        max_input_tokens: int | None = None,
        models: Sequence[str] = DEFAULT_MODELS,
    ) -> None:
        super().__init__(dimensions=dimensions, max_input_tokens=max_input_tokens)
        self.models = list(models)

    @property
    def base_url(self) -> str:
        return self.root_url

    def routes(self) -> list[web.RouteDef]:
        return [
            *super().routes(),
            web.post("/api/embed", self._embed),
            web.post("/api/embeddings", self._legacy_embeddings),
            web.get("/api/tags", self._tags),
        ]

    async def _embed(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter_ns()
        body = await json_body(request)
        reply = self.script.next()
        if (error := scripted_error(reply, ollama_error)) is not None:
            return error
        value = body.get("input")
        texts = [value] if isinstance(value, str) else value
        if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
            return web.json_response({"error": "invalid input type"}, status=400)
        counts = [count_tokens(text) for text in texts]
        limit = self.max_input_tokens
        if limit is not None and body.get("truncate") is False and any(n > limit for n in counts):
            return web.json_response({"error": "the input length exceeds the context length"}, status=400)
        dimensions = int(body.get("dimensions") or self.dimensions)
        answer = {
            "model": body.get("model"),
            "embeddings": [embed(text, dimensions) for text in texts],
            "total_duration": time.perf_counter_ns() - started,
            "load_duration": 0,
            "prompt_eval_count": sum(counts),
        }
        return await self.answer_json(request, reply, answer)

    async def _legacy_embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await json_body(request)
        reply = self.script.next()
        if (error := scripted_error(reply, ollama_error)) is not None:
            return error
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            return web.json_response({"error": "prompt must be a string"}, status=400)
        return await self.answer_json(request, reply, {"embedding": embed(prompt, self.dimensions)})

    async def _tags(self, request: web.Request) -> web.StreamResponse:
        return web.json_response({"models": [_model_entry(name) for name in self.models]})
