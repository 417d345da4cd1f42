"""Embeddings over the `openai` SDK: OpenAI itself, and Together, which speaks the same `/v1/embeddings`.

The SDK's own retries are off (`max_retries=0`): retrying lives in `RemoteEmbedder`, once for every vendor, so a
429 is not retried twice over with two different backoffs. The model table says per provider whether to ask for
base64 (OpenAI: about a third of the bytes of JSON floats) or floats (which every OpenAI-compatible server
supports; not all of them decode base64 requests).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

import openai

from secondbrain.embedding.models import ModelSpec
from secondbrain.embedding.remote import REQUEST_TIMEOUT_SECONDS, BatchOptions, RemoteEmbedder
from secondbrain.providers import ProviderContext, connection_error


class OpenAIEmbedder(RemoteEmbedder):
    def __init__(self, spec: ModelSpec, context: ProviderContext, **options: Unpack[BatchOptions]) -> None:
        super().__init__(spec, context, **options)
        self.client = openai.AsyncOpenAI(
            api_key=context.api_key or "unused",  # the factory requires a key; the SDK insists on a string
            base_url=context.base_url,
            max_retries=0,
            timeout=REQUEST_TIMEOUT_SECONDS,
        )

    async def _request_once(self, inputs: list[str]) -> Sequence[Sequence[float]]:
        try:
            if self.spec.encoding_format == "base64":
                # Left unnamed on purpose: the SDK then asks for base64 and decodes it; named, it hands back strings.
                response = await self.client.embeddings.create(model=self.model, input=inputs)
            else:
                response = await self.client.embeddings.create(model=self.model, input=inputs, encoding_format="float")
        except openai.APIStatusError as error:
            body = error.body if isinstance(error.body, dict) else {}
            message = str(body.get("message") or error.message)
            raise self._status_failure(error.status_code, message, error.response.headers) from None
        except openai.APIConnectionError as error:  # refused, reset, timed out
            raise connection_error(self.context, error) from None
        except ValueError as error:  # the SDK's parser: an answer with no vectors, or bytes that are not floats
            raise self._malformed(str(error)) from None
        data = sorted(response.data, key=lambda item: item.index)
        vectors = [item.embedding for item in data]
        if any(isinstance(vector, str) for vector in vectors):
            raise self._malformed("base64 vectors where floats were asked for")
        return vectors

    async def aclose(self) -> None:
        await self.client.close()
