"""Envoy gzips the web UI's files for a browser that asks (a phone on a slow link waits for its script before the
first paint), and nothing else: not grpc-web, not the API's JSON, not a stream."""

from __future__ import annotations

import gzip
import re

from secondbrain.retrieve.v1 import retrieve_service_pb2 as retrieve
from tests.gateway.conftest import Gateway
from tests.gateway.grpc_web import call

GZIP = {"accept-encoding": "gzip"}


async def test_the_ui_is_gzipped_and_the_api_is_not(gateway: Gateway) -> None:
    client = gateway.client(gateway.envoy_url)
    page = await client.get("/", headers=GZIP)
    assert page.status_code == 200 and page.headers["content-encoding"] == "gzip"
    script = re.search(r'src="(/assets/[^"]+\.js)"', page.text)
    assert script, page.text
    async with client.stream("GET", script.group(1), headers=GZIP) as response:
        raw = b"".join([chunk async for chunk in response.aiter_raw()])
    assert response.headers["content-encoding"] == "gzip"
    unpacked = gzip.decompress(raw)
    assert len(raw) < len(unpacked) / 2, "the script is at least halved"
    # A client that does not ask gets the bytes as they are.
    plain = await client.get(script.group(1), headers={"accept-encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.content == unpacked

    status = await client.get("/api/index/status", headers=GZIP)
    assert status.status_code == 200 and "content-encoding" not in status.headers
    search = await call(
        client, "/secondbrain.retrieve.v1.RetrieveService/Search", retrieve.SearchRequest(query="Lisbon"), GZIP
    )
    assert search.grpc_status == 0 and "content-encoding" not in search.headers
    async with client.stream(
        "POST", "/api/retrieve", json={"query": "Lisbon"}, headers={**GZIP, "accept": "text/event-stream"}
    ) as answer:
        assert answer.headers["content-type"].startswith("text/event-stream")
        assert "content-encoding" not in answer.headers
