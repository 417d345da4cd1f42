"""What every call to a model provider shares, whatever it asks for (a chat answer, vectors, a reranking): where
the provider lives and its key (`endpoints`, `context`), what its failures mean to a person (`errors`), and
retrying what may pass (`retry`). Chat models (`secondbrain.llm`), embedders (`secondbrain.embedding`) and the
reranker build on it."""

from secondbrain.providers.context import ProviderContext, scrub
from secondbrain.providers.endpoints import Endpoint, api_root, endpoints
from secondbrain.providers.errors import RetryableFailure, connection_error, status_error
from secondbrain.providers.retry import RetryPolicy, call_with_retries

__all__ = [
    "Endpoint",
    "ProviderContext",
    "RetryPolicy",
    "RetryableFailure",
    "api_root",
    "call_with_retries",
    "connection_error",
    "endpoints",
    "scrub",
    "status_error",
]
