"""The note tools over MCP's streamable HTTP at /mcp, through the real Envoy, with the official SDK's client: the
same tools as `secondbrain mcp`, each called, and the API token asked for when one is configured."""

from __future__ import annotations

import json

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.conftest import Gateway
from tests.gateway.test_auth import TOKEN, guarded  # noqa: F401 - the fixture these tests use
from tests.wire import Reply


async def indexed(gateway: Gateway) -> None:
    gateway.chat.write("Projects/Kitchen.md", "# Kitchen\n\n## Worktop\nA quartz composite worktop, pale grey.\n")
    gateway.chat.write("Areas/Suppliers.md", "# Suppliers\n\nCosta & Filhos cut the [[Kitchen]] worktop.\n")
    await gateway.chat.ingest()


async def test_an_assistant_reaches_the_note_tools_through_envoy_with_the_token(guarded: Gateway) -> None:  # noqa: F811
    await indexed(guarded)
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http,
        streamable_http_client(f"{guarded.envoy_url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools == {
            "search_notes", "retrieve_passages", "read_note", "list_notes", "note_links", "related_notes", "ask",
        }  # fmt: skip
        found = await session.call_tool("search_notes", {"query": "quartz worktop", "mode": "lexical"})
        assert not found.is_error and "Projects/Kitchen.md" in found.content[0].text
        links = await session.call_tool("note_links", {"path": "Projects/Kitchen.md"})
        assert "Areas/Suppliers.md, line 3" in links.content[0].text
        passages = await session.call_tool("retrieve_passages", {"question": "Which worktop did we choose?"})
        assert not passages.is_error and "Projects/Kitchen.md" in passages.content[0].text
        lines = await session.call_tool("read_note", {"path": "Projects/Kitchen.md", "start_line": 4})
        assert lines.content[0].text.endswith("A quartz composite worktop, pale grey.")
        listed = await session.call_tool("list_notes", {"folder": "Areas"})
        assert "Areas/Suppliers.md" in listed.content[0].text and "Projects/Kitchen.md" not in listed.content[0].text
        guarded.chat.llm.script.push(Reply(deltas=["A pale grey quartz composite [1]."]))
        answer = await session.call_tool("ask", {"question": "Which worktop did we choose?"})
        assert not answer.is_error and answer.content[0].text.startswith("A pale grey quartz composite [1].")
        missing = await session.call_tool("read_note", {"path": "Projects/Nowhere.md"})
        assert missing.is_error and "the index holds no note at 'Projects/Nowhere.md'" in missing.content[0].text
        uris = [r.uri for r in (await session.list_resources()).resources]
        assert {"note://Areas/Suppliers.md", "note://Projects/Kitchen.md"} <= set(uris) and uris == sorted(uris)


async def test_mcp_without_the_token_is_refused(guarded: Gateway) -> None:  # noqa: F811
    refused = await guarded.client(guarded.envoy_url).post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
    with pytest.raises(BaseException):  # noqa: B017 - the SDK raises an exception group around the 401
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            streamable_http_client(f"{guarded.envoy_url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()


async def test_a_get_opens_no_event_stream_that_would_never_close(guarded: Gateway) -> None:  # noqa: F811
    """Issue 47, friction 5: each `GET /mcp` was an event stream that never closed (pings every 15 s kept it under
    Envoy's idle timeout); stateless, the endpoint has nothing to send on one, so it answers 405 at once."""
    client = guarded.client(guarded.envoy_url, authorization=f"Bearer {TOKEN}")
    for _ in range(3):
        async with client.stream("GET", "/mcp", headers={"accept": "text/event-stream"}) as response:
            # Judged from the head: a stream's body would never end.
            assert response.status_code == 405 and response.headers["allow"] == "POST", response.headers
            body = await response.aread()
        assert "no event stream" in json.loads(body)["error"]["message"]
    # The POSTs the SDK's client makes are answered as before.
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http,
        streamable_http_client(f"{guarded.envoy_url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert "search_notes" in {tool.name for tool in (await session.list_tools()).tools}
