"""The factory: the embedder a vault's `embedding` section asks for, with its endpoint and key from the environment.

Vendor modules import their SDKs (onnxruntime, torch, openai, httpx2), so only the one in use is imported. Endpoints
and keys come from the providers' table the chat providers use too (TOGETHER_API_KEY/TOGETHER_BASE_URL,
OPENAI_API_KEY/OPENAI_BASE_URL, OLLAMA_URL), so one variable points both at the same place. A remote provider without
its key is refused here, at start, naming the variable, rather than on the first chunk of an ingest run; so is the
local model without its files installed (`bundle.py`), and its `torch` runtime without the optional extra
(`secondbrain[torch]`), naming what to install.

The local embedder's ONNX runtimes cache their export in `models_dir`: the one passed in (`Settings.models_dir`), else
the one `env` names as `Settings.models_dir` would (SECONDBRAIN_MODEL_CACHE_DIR, else models/ in SECONDBRAIN_DATA_DIR
or the default data directory).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from secondbrain.config import models_dir_in
from secondbrain.embedding.base import Embedder
from secondbrain.embedding.models import lookup
from secondbrain.embedding.remote import BatchOptions
from secondbrain.errors import FailedPrecondition
from secondbrain.providers import RetryPolicy, endpoints
from secondbrain.vault_config import EmbeddingSection


def create_embedder(
    section: EmbeddingSection,
    env: Mapping[str, str] | None = None,
    *,
    retry: RetryPolicy | None = None,
    models_dir: Path | None = None,
    serves_queries: bool = False,
) -> Embedder:
    """A ready-to-call embedder for `section` (nothing is loaded or contacted yet).

    `env` defaults to the process environment; `retry` to the shared policy (tests pass a fast one); `models_dir` is
    where a local ONNX runtime caches its export (see the module); `serves_queries` says the process embeds queries
    as they come rather than documents in bulk, which the local embedder's threads are tuned for.
    Raises ConfigError for a local model that is not the bundled one or the torch runtime without its extra,
    FailedPrecondition for a missing key or the local model's files not installed.
    """
    env = os.environ if env is None else env
    spec = lookup(section.provider, section.model)
    if spec.provider == "local":
        from secondbrain.embedding import bundle
        from secondbrain.embedding.local import LocalEmbedder

        bundle.require_installed()
        if section.runtime == "torch":
            # An optional extra: refused here, at start, naming it, not on the first text to embed.
            from secondbrain.embedding.torch_runtime import require_installed

            require_installed()

        if models_dir is None:
            models_dir = models_dir_in(env)
        return LocalEmbedder(
            spec,
            batch_size=section.batch_size,
            runtime=section.runtime,
            cache_dir=models_dir,
            serves_queries=serves_queries,
        )

    context = endpoints()[spec.provider].context(spec.provider, env)
    if context.api_key_env and not context.api_key:
        raise FailedPrecondition(
            f"embedding.provider is {spec.provider!r} but {context.api_key_env} is not set: set it, or use the local "
            "provider, which needs no key"
        )
    options = BatchOptions(batch_size=section.batch_size, concurrency=section.concurrency, retry=retry)
    if spec.provider == "ollama":
        from secondbrain.embedding.ollama_embedder import OllamaEmbedder

        return OllamaEmbedder(spec, context, **options)
    from secondbrain.embedding.openai_embedder import OpenAIEmbedder

    return OpenAIEmbedder(spec, context, **options)
