"""Turning a provider's HTTP failure into a domain error a person can act on, the same way for every vendor and
every kind of call (chat, embedding, rerank).

Vendor modules only pull (status, message, headers) out of their SDK's exceptions; the wording, the choice
between "fix your key", "fix the request" and "try again later", and the scrubbing of keys happen here, once.
"""

from __future__ import annotations

from collections.abc import Mapping

from secondbrain.errors import FailedPrecondition, InvalidInput, SecondbrainError, Unavailable
from secondbrain.providers.context import ProviderContext

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


class RetryableFailure(Exception):
    """A failure worth retrying (rate limit, overload, 5xx, network) before any text was streamed."""

    def __init__(self, error: SecondbrainError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def status_error(
    context: ProviderContext, status: int, message: str, model: str, headers: Mapping[str, str] | None = None
) -> SecondbrainError | RetryableFailure:
    """The domain error for an HTTP error status from a provider; `headers` (the response's) may say when to retry."""
    name = context.display_name
    detail = context.scrub(message).strip() or "no detail"
    if status in (401, 403):
        fix = f"set {context.api_key_env} to a valid key" if context.api_key_env else "check the provider's credentials"
        return FailedPrecondition(f"{name} rejected the request as unauthorised ({status}): {fix}")
    if status == 404:
        return InvalidInput(
            f"{name} answered 404 for model {model!r} at {context.base_url}: check the model name and base URL"
            f" ({detail})"
        )
    if status in RETRYABLE_STATUSES or status >= 500:
        what = "is rate-limiting requests" if status == 429 else "is failing or overloaded"
        retry_after = retry_after_seconds(headers or {})
        return RetryableFailure(Unavailable(f"{name} {what} ({status}: {detail}); try again later"), retry_after)
    return InvalidInput(f"{name} refused the request ({status}): {detail}")


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The delay a `retry-after` header asks for, in seconds; None when absent or not a number of seconds."""
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def connection_error(context: ProviderContext, error: Exception) -> RetryableFailure:
    """The provider could not be reached (refused, reset, timed out): worth retrying."""
    reason = context.scrub(str(error)) or type(error).__name__
    return RetryableFailure(Unavailable(f"cannot reach {context.display_name} at {context.base_url}: {reason}"))
