"""Embeddings from Ollama's native `POST /api/embed`, over httpx2 (the HTTP client the vendor SDKs are built on).

The native route rather than Ollama's OpenAI-compatible `/v1/embeddings`: only the native one takes
`truncate: false`. Ollama otherwise cuts an over-long input to the model's context silently; with it off, Ollama
refuses the request, and `RemoteEmbedder` bisects, cuts the one culprit itself and counts it, so ingest can say
which notes were not embedded whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

import httpx2

from secondbrain.embedding.models import ModelSpec
from secondbrain.embedding.remote import REQUEST_TIMEOUT_SECONDS, BatchOptions, RemoteEmbedder
from secondbrain.providers import ProviderContext, api_root, connection_error

# Seconds to open a connection; a local Ollama answers at once or is not running.
CONNECT_TIMEOUT_SECONDS = 10.0


class OllamaEmbedder(RemoteEmbedder):
    def __init__(self, spec: ModelSpec, context: ProviderContext, **options: Unpack[BatchOptions]) -> None:
        super().__init__(spec, context, **options)
        # The endpoint's base URL points at the OpenAI-compatible `/v1`; the native routes hang from its root.
        self.root_url = api_root(context.base_url)
        self.client = httpx2.AsyncClient(
            base_url=self.root_url,
            timeout=httpx2.Timeout(REQUEST_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS),
        )

    async def _request_once(self, inputs: list[str]) -> Sequence[Sequence[float]]:
        try:
            response = await self.client.post(
                "/api/embed", json={"model": self.model, "input": inputs, "truncate": False}
            )
        except httpx2.TransportError as error:  # refused, reset, timed out
            raise connection_error(self.context, error) from None
        body = _json(response)
        if response.status_code >= 400:
            message = str(body.get("error") or response.text) if isinstance(body, dict) else response.text
            raise self._status_failure(response.status_code, message, response.headers) from None
        embeddings = body.get("embeddings") if isinstance(body, dict) else None
        if not isinstance(embeddings, list):
            raise self._malformed("no `embeddings` list")
        return embeddings

    async def aclose(self) -> None:
        await self.client.aclose()


def _json(response: httpx2.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
