"""Rerank: a cross-encoder reorders the fused candidates, through the Cohere-style `POST /v1/rerank`.

Together, Cohere and Jina all speak it (`{"model", "query", "documents", "top_n"}` in, `{"results": [{"index",
"relevance_score"}]}` out), so one client over httpx2 (the HTTP client the vendor SDKs are built on) serves them
all, and `custom` points it at anything else that does. Where each provider lives and its key variable come from
the providers' table every kind of call shares (`secondbrain.providers.endpoints`). Failures are domain errors
worded like the chat providers', through the same `secondbrain.providers.errors` helpers: the pipeline keeps the
fused order when reranking fails and shows the message in the plan, so it must say what to fix.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2

from secondbrain.errors import ConfigError, FailedPrecondition, InvalidInput, Unavailable
from secondbrain.providers import (
    Endpoint,
    ProviderContext,
    RetryPolicy,
    api_root,
    call_with_retries,
    connection_error,
    endpoints,
    status_error,
)
from secondbrain.vault_config import RerankSection

# Candidates are chunks of a few hundred tokens, so these limits touch only pathological ones (a huge table or code
# fence the chunker would not split). A relevance judgement needs a passage's opening, not all of it; every
# document is billed and sent each turn; and each provider has a per-document window (Jina's v2 reads 1024 tokens)
# past which it either cuts silently or refuses the whole request. ~4 characters a token: about 1000 tokens.
MAX_DOCUMENT_CHARS = 4000
# The query is a question: anything longer is a paste, and only its start says what is being asked.
MAX_QUERY_CHARS = 2000


# Each provider's reranker unless `retrieve.reranker.model` or the request names another.
DEFAULT_MODELS = {
    "together": "Salesforce/Llama-Rank-V1",
    "cohere": "rerank-v3.5",
    "jina": "jina-reranker-v2-base-multilingual",
}
CUSTOM = "custom"
# Anything else that speaks the protocol (a self-hosted server, a gateway): it has no URL, key or model of its own,
# and a local server may need no key at all.
CUSTOM_ENDPOINT = Endpoint(display_name="the custom reranker")


@dataclass(frozen=True)
class RerankResult:
    """One document's relevance to the query, as the provider judged it."""

    index: int
    """Into the documents given."""
    score: float


def rerank_url(base_url: str) -> str:
    """`{base}/v1/rerank`; a base that already ends in /v1 (as the chat base URLs do) is taken as it is."""
    return f"{api_root(base_url)}/v1/rerank"


class Reranker:
    """One provider's /v1/rerank. Create with `create_reranker`; `aclose()` when done (it pools connections)."""

    def __init__(
        self, context: ProviderContext, model: str, *, timeout_seconds: float, retry: RetryPolicy | None = None
    ) -> None:
        self.context = context
        self.model = model
        self.url = rerank_url(context.base_url)
        self.timeout_seconds = timeout_seconds
        # The whole call, retries included, has to fit in the timeout: the pipeline is waiting with a user.
        self.retry = retry or RetryPolicy(attempts=3, deadline_seconds=timeout_seconds)
        headers = {"Authorization": f"Bearer {context.api_key}"} if context.api_key else {}
        self.client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(timeout_seconds))

    async def rerank(self, query: str, documents: Sequence[str], top_n: int) -> list[RerankResult]:
        """The `top_n` best of `documents` for `query`, best first.

        Raises FailedPrecondition (the key was refused: it names the variable), InvalidInput (the provider refused
        the request), or Unavailable (unreachable, rate-limited or failing after retries, too slow, or an answer
        that does not parse).
        """
        if top_n < 1:
            raise InvalidInput(f"top_n must be at least 1, not {top_n}")
        if not documents:
            return []
        top_n = min(top_n, len(documents))
        payload = {
            "model": self.model,
            "query": query[:MAX_QUERY_CHARS],
            "documents": [document[:MAX_DOCUMENT_CHARS] for document in documents],
            "top_n": top_n,
        }
        try:
            async with asyncio.timeout(self.timeout_seconds):
                body = await call_with_retries(
                    lambda: self._post_once(payload), self.retry, f"rerank {self.context.provider_id}"
                )
        except TimeoutError:
            raise Unavailable(
                f"{self.context.display_name} did not rerank within {self.timeout_seconds:g} s; try again later"
            ) from None
        return self._parse(body, len(documents), top_n)

    async def _post_once(self, payload: dict[str, Any]) -> Any:
        try:
            response = await self.client.post(self.url, json=payload)
        except httpx2.TransportError as error:  # refused, reset, timed out
            raise connection_error(self.context, error) from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 400:
            message = _error_message(body, response.text)
            raise status_error(self.context, response.status_code, message, self.model, response.headers)
        if body is None:
            raise self._malformed(f"status {response.status_code} with a body that is not JSON")
        return body

    def _parse(self, body: Any, count: int, top_n: int) -> list[RerankResult]:
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list):
            raise self._malformed('no "results" list')
        ranked: list[RerankResult] = []
        seen: set[int] = set()
        for result in results:
            index = result.get("index") if isinstance(result, dict) else None
            score = result.get("relevance_score") if isinstance(result, dict) else None
            # bool is an int in Python; a true/false index is a broken answer, not document 1 or 0.
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count or index in seen:
                raise self._malformed(f"a result has index {index!r}, but {count} documents were sent")
            if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
                raise self._malformed(f"result {index} has relevance_score {score!r}")
            seen.add(index)
            ranked.append(RerankResult(index, float(score)))
        # Providers answer best first, but the contract here should not rest on that.
        ranked.sort(key=lambda r: r.score, reverse=True)
        return ranked[:top_n]

    def _malformed(self, what: str) -> Unavailable:
        return Unavailable(f"{self.context.display_name} answered the rerank request with a malformed body: {what}")

    async def aclose(self) -> None:
        await self.client.aclose()


def _error_message(body: Any, text: str) -> str:
    """The message in a provider's error body: Cohere's `message`, an OpenAI-style `error`, or FastAPI's `detail`."""
    if isinstance(body, dict):
        for key in ("message", "error", "detail"):
            value = body.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if isinstance(value, str) and value:
                return value
    return text[:500]


def create_reranker(
    section: RerankSection,
    env: Mapping[str, str] | None = None,
    *,
    model: str | None = None,
    retry: RetryPolicy | None = None,
) -> Reranker:
    """The reranker `retrieve.reranker` names, its key read from `env` (default: the process environment).

    `model` (a request's choice) wins over `section.model`, which wins over the provider's default; `retry`
    replaces the default policy (tests pass a fast one). Raises ConfigError when `custom` has no base URL or no
    model, and FailedPrecondition naming the variable when the key is not set, here at creation rather than on
    the first question.
    """
    env = os.environ if env is None else env
    endpoint = CUSTOM_ENDPOINT if section.provider == CUSTOM else endpoints()[section.provider]
    # The table's base URL is the chat one (ending in /v1 where the provider has one); /v1/rerank hangs from its root.
    # Unlike chat and embedding, the reranker does not follow the provider's base URL variable (TOGETHER_BASE_URL):
    # retrieve.reranker.base_url moves it.
    base_url = section.base_url or (api_root(endpoint.base_url) if endpoint.base_url else None)
    if not base_url:
        raise ConfigError(
            "secondbrain.json: retrieve.reranker.base_url: required when retrieve.reranker.provider is 'custom'"
        )
    chosen = model or section.model or DEFAULT_MODELS.get(section.provider)
    if not chosen:
        raise ConfigError(
            "secondbrain.json: retrieve.reranker.model: required when retrieve.reranker.provider is 'custom'"
        )
    # A URL of the vault's own is sent only the key it names for it (providers.env_names), never the provider's.
    key_env = section.api_key_env if section.base_url else (section.api_key_env or endpoint.api_key_env)
    api_key = env.get(key_env) if key_env else None
    if key_env and not api_key:
        raise FailedPrecondition(
            f"reranking with {endpoint.display_name} needs an API key: set {key_env}, or turn retrieve.rerank off"
        )
    name = f"{endpoint.display_name} reranker" if section.provider != CUSTOM else endpoint.display_name
    context = ProviderContext(section.provider, name, base_url.rstrip("/"), key_env, api_key)
    return Reranker(context, chosen, timeout_seconds=section.timeout_seconds, retry=retry)
