"""The REST shim against its own OpenAPI document, by schemathesis: requests generated from the document, in front
of the real services. Every answer must be a documented status with a documented body and content type, and never a
server error (5xx other than the documented 503 when a backend is down, which here none is)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.chat.conftest import stack  # noqa: F401 - the fixtures this module builds on
from tests.gateway.conftest import Gateway, gateway  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

EXAMPLES_PER_OPERATION = 20


def not_a_server_error(ctx: object, response: Any, case: schemathesis.Case) -> bool | None:
    if response.status_code >= 500:
        raise AssertionError(f"{case.method} {case.formatted_path} gave {response.status_code}: {response.text[:300]}")
    return None


def fuzz(base_url: str) -> list[str]:
    """Every operation of the document, EXAMPLES_PER_OPERATION generated requests each; returns what was run."""
    schema = schemathesis.openapi.from_url(f"{base_url}/api/openapi.json")
    ran = []
    statuses: dict[int, int] = {}
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: schemathesis.Case) -> None:
            response = case.call(base_url=base_url, timeout=30)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            case.validate_response(
                response,
                checks=[
                    not_a_server_error,
                    status_code_conformance,
                    content_type_conformance,
                    response_schema_conformance,
                ],
            )

        check()
        ran.append(f"{operation.method.upper()} {operation.path}")
    print("statuses", statuses)
    return ran


async def test_the_shim_keeps_its_openapi_document_under_generated_requests(gateway: Gateway) -> None:  # noqa: F811
    """schemathesis: generated requests for every REST operation, answers checked against the OpenAPI document."""
    # schemathesis is synchronous: it runs in a thread, so the shim (on this event loop) can answer it.
    ran = await asyncio.to_thread(fuzz, gateway.shim_url)
    assert len(ran) >= 12, ran
    assert {"GET /v1/models", "POST /v1/chat/completions"} <= set(ran), "the OpenAI-compatible operations too"
