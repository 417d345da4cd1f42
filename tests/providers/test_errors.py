"""A provider's failures (`secondbrain.providers.errors`) become errors a person can act on, the same for every
vendor and every kind of call, and never show the key."""

from __future__ import annotations

import pytest

from secondbrain.errors import FailedPrecondition, InvalidInput, Unavailable
from secondbrain.providers import ProviderContext, RetryableFailure, connection_error, scrub, status_error
from secondbrain.providers.errors import retry_after_seconds

KEY = "sk-test-4f9a8b7c6d5e4f3a2b1c"
CONTEXT = ProviderContext("together", "Together AI", "https://api.together.xyz/v1", "TOGETHER_API_KEY", KEY)


def test_scrub_hides_a_key_and_any_long_prefix_a_vendor_echoes() -> None:
    assert scrub(f"bad key {KEY}", KEY) == "bad key ***"
    assert KEY[:12] not in scrub(f"Incorrect API key provided: {KEY[:12]}...{KEY[-4:]}", KEY)
    assert scrub("the word secret stays", "short") == "the word secret stays", "a short secret is no key"
    assert scrub("nothing to hide", None) == "nothing to hide"


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_names_the_variable_to_fix(status: int) -> None:
    error = status_error(CONTEXT, status, f"invalid key {KEY}", "m")
    assert isinstance(error, FailedPrecondition)
    assert "set TOGETHER_API_KEY to a valid key" in str(error) and KEY not in str(error)
    keyless = ProviderContext("ollama", "Ollama", "http://127.0.0.1:11434/v1", None, None)
    assert "check the provider's credentials" in str(status_error(keyless, status, "", "m"))


def test_404_names_the_model_and_the_base_url() -> None:
    error = status_error(CONTEXT, 404, "model not found", "llama-9")
    assert isinstance(error, InvalidInput)
    assert "'llama-9'" in str(error) and "https://api.together.xyz/v1" in str(error)


@pytest.mark.parametrize(
    ("status", "wording"),
    [(429, "is rate-limiting requests"), (500, "is failing or overloaded"), (529, "is failing or overloaded")],
)
def test_what_may_pass_is_retryable_with_the_delay_the_provider_asks_for(status: int, wording: str) -> None:
    failure = status_error(CONTEXT, status, f"busy {KEY}", "m", {"retry-after": "2"})
    assert isinstance(failure, RetryableFailure) and isinstance(failure.error, Unavailable)
    assert f"Together AI {wording} ({status}: busy ***); try again later" == str(failure.error)
    assert failure.retry_after == 2.0
    without_header = status_error(CONTEXT, status, "busy", "m")
    assert isinstance(without_header, RetryableFailure) and without_header.retry_after is None


def test_any_other_refusal_is_the_requests_fault() -> None:
    error = status_error(CONTEXT, 400, "", "m")
    assert isinstance(error, InvalidInput) and str(error) == "Together AI refused the request (400): no detail"


@pytest.mark.parametrize(("value", "seconds"), [("3", 3.0), ("0.5", 0.5), ("Wed, 21 Oct 2026 07:28:00 GMT", None)])
def test_retry_after_is_read_in_seconds_only(value: str, seconds: float | None) -> None:
    assert retry_after_seconds({"retry-after": value}) == seconds
    assert retry_after_seconds({}) is None


def test_an_unreachable_provider_is_retryable_and_named_without_the_key() -> None:
    failure = connection_error(CONTEXT, OSError(f"refused while sending {KEY}"))
    assert isinstance(failure.error, Unavailable)
    assert str(failure.error) == "cannot reach Together AI at https://api.together.xyz/v1: refused while sending ***"
    assert "TimeoutError" in str(connection_error(CONTEXT, TimeoutError()).error), "an empty message says its kind"
