"""Turning a provider's HTTP failure into a domain error a person can act on, the same way for every vendor.

Vendor modules only pull (status, message, retry-after) out of their SDK's exceptions; the wording, the choice
between "fix your key", "fix the request" and "try again later", and the scrubbing of keys happen here, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from secondbrain.errors import FailedPrecondition, InvalidInput, SecondbrainError, Unavailable

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


def scrub(text: str, *secrets: str | None) -> str:
    """`text` with every secret (and any long prefix of it that a vendor echoes back) replaced by ***."""
    for secret in secrets:
        if secret and len(secret) >= 8:
            text = text.replace(secret, "***")
            # Vendors echo a truncated key ("sk-abc123...wxyz"): hide any 8+ character prefix too.
            for length in range(len(secret) - 1, 7, -1):
                text = text.replace(secret[:length], "***")
    return text


@dataclass(frozen=True)
class ProviderContext:
    """What an error message needs to know about the provider that failed."""

    provider_id: str
    display_name: str
    base_url: str
    api_key_env: str | None
    api_key: str | None

    def scrub(self, text: str) -> str:
        return scrub(text, self.api_key)


class RetryableFailure(Exception):
    """A failure worth retrying (rate limit, overload, 5xx, network) before any text was streamed."""

    def __init__(self, error: SecondbrainError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def status_error(
    context: ProviderContext, status: int, message: str, model: str, retry_after: float | None = None
) -> SecondbrainError | RetryableFailure:
    """The domain error for an HTTP error status from a provider."""
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
    reason = context.scrub(str(error)) or type(error).__name__
    return RetryableFailure(Unavailable(f"cannot reach {context.display_name} at {context.base_url}: {reason}"))


def broken_stream(context: ProviderContext, reason: str) -> Unavailable:
    """The stream failed after text had arrived: the answer is incomplete and must not pass as whole."""
    return Unavailable(f"the answer from {context.display_name} stopped part way: {context.scrub(reason)}")
