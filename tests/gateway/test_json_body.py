"""Every JSON door of the shim reads numbers within bounds (issue 47, H4): a number too long to be any field's value
is a 400 saying so, never a 500 (Python refuses an int of over 4,300 digits with a bare ValueError) nor a traceback
in the log. None of these reach a service, so the shim runs alone in front of addresses where nothing listens."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import httpx2
import pytest

from secondbrain.config import load_settings
from secondbrain.gateway.json_body import MAX_NUMBER_CHARS, parse_json
from secondbrain.gateway.server import RunningShim, start_shim

NOWHERE = {"ingest": "127.0.0.1:9", "retrieve": "127.0.0.1:9", "chat": "127.0.0.1:9"}
JSON = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture
async def shim() -> AsyncIterator[RunningShim]:
    running = await start_shim(load_settings(), host="127.0.0.1", port=0, addresses=NOWHERE)
    try:
        yield running
    finally:
        await running.stop()


def _bodies(number: str) -> list[tuple[str, str, str]]:
    return [
        ("POST", "/api/retrieve", f'{{"query": "lisbon", "options": {{"maxPassages": {number}}}}}'),
        ("POST", "/api/chat/conversations", f'{{"title": "t", "x": [{number}]}}'),
        ("PATCH", "/api/chat/conversations/c1", f'{{"title": {number}}}'),
        ("POST", "/v1/chat/completions", f'{{"model": "m", "messages": [], "max_tokens": {number}}}'),
        (
            "POST",
            "/mcp",
            '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
            f'"params": {{"name": "search_notes", "arguments": {{"query": "x", "limit": {number}}}}}}}',
        ),
    ]


@pytest.mark.parametrize(
    "number", ["9" * 4301, "9" * 200_000, "1." + "5" * 5000, "-" + "7" * (MAX_NUMBER_CHARS + 1)], ids=len
)
async def test_a_number_too_long_is_a_400_at_every_json_door(
    shim: RunningShim, number: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{shim.port}", timeout=10.0) as client:
        for method, path, body in _bodies(number):
            response = await client.request(method, path, content=body.encode(), headers=JSON)
            assert response.status_code == 400, (path, response.status_code, response.text[:300])
            assert f"at most {MAX_NUMBER_CHARS}" in response.text, (path, response.text[:300])
    logged = "\n".join(record.getMessage() + (record.exc_text or "") for record in caplog.records)
    assert "Traceback" not in logged and "Exceeds the limit" not in logged
    assert not [record for record in caplog.records if record.exc_info], logged[:2000]


def test_numbers_up_to_the_bound_are_read_as_numbers() -> None:
    assert parse_json(b'{"a": 18446744073709551615, "b": -1.5e-300, "c": 0.1000000000000000055511151231257827}') == {
        "a": 18446744073709551615,
        "b": -1.5e-300,
        "c": 0.1000000000000000055511151231257827,
    }
    assert parse_json("9" * MAX_NUMBER_CHARS) == int("9" * MAX_NUMBER_CHARS)
    assert parse_json(b"  ") == {}
