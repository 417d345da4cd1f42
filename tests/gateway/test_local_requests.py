"""With no API token, the gateway answers only this machine's own pages (found by a probe: a page elsewhere read every
note through a loopback-only gateway by rebinding its own name to 127.0.0.1, and started turns with cross-site POSTs
of `text/plain`). Every door is tried: Envoy's grpc-web and REST routes, the shim's `/api/`, `/v1/` and `/mcp`."""

from __future__ import annotations

from urllib.parse import unquote

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from secondbrain.chat.v1 import chat_service_pb2 as chat
from secondbrain.config import Settings
from secondbrain.gateway.envoy_config import local_layout, render
from secondbrain.gateway.local_requests import FOREIGN_HOST_REFUSAL, LOOPBACK_NAMES
from secondbrain.service.auth import is_loopback_host, is_loopback_origin
from tests.gateway.conftest import Gateway
from tests.gateway.grpc_web import call, frame

TOKEN = "a-token-long-enough-for-tests-0123456789"
OPTIONS = "/secondbrain.chat.v1.ChatService/GetOptions"
FOREIGN = "attacker.example"
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
MCP_LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@pytest.mark.parametrize(
    "host",
    ["localhost", "localhost:8080", "LOCALHOST:8080", "app.localhost:5173", "127.0.0.1", "127.0.0.1:18080",
     "[::1]", "[::1]:8080"],
)  # fmt: skip
def test_loopback_names(host: str) -> None:
    assert is_loopback_host(host)
    assert is_loopback_origin(f"http://{host}")


@pytest.mark.parametrize(
    "host",
    ["attacker.example", "attacker.example:8080", "localhost.attacker.example", "127.0.0.1.nip.io", "10.0.0.1",
     "[::2]:80", "0.0.0.0", "", "[::1", "localhost:80:80", "127.0.0.1@evil.example", "127.0.0.1:80@evil",
     "localhost:abc", "evil.example/.localhost", "evil.example .localhost", "[::1]evil.example", "::1", ".localhost",
     "[::ffff:127.0.0.1]", "0x7f.1", "2130706433"],
)  # fmt: skip
def test_other_names(host: str) -> None:
    assert not is_loopback_host(host)
    assert not is_loopback_origin(f"http://{host}")


@pytest.mark.parametrize("origin", ["null", "file://", "ftp://localhost", "localhost:8080", "http://", ""])
def test_origins_that_are_no_page_of_this_machine(origin: str) -> None:
    assert not is_loopback_origin(origin)


@given(st.text(max_size=200))
def test_any_header_text_is_judged_without_raising(text: str) -> None:
    assert isinstance(is_loopback_host(text), bool)
    assert isinstance(is_loopback_origin(text), bool)


async def test_envoy_refuses_another_name_on_every_route(gateway: Gateway) -> None:
    await gateway.start()
    local = gateway.client(gateway.envoy_url)
    rebound = gateway.client(gateway.envoy_url, host=f"{FOREIGN}:{gateway.envoy.port}")  # type: ignore[union-attr]
    assert (await local.get("/api/chat/options")).status_code == 200
    assert (await call(local, OPTIONS, chat.GetOptionsRequest())).grpc_status == 0
    for refused in (
        await rebound.get("/api/chat/options"),
        await rebound.get("/api/chat/conversations"),
        await rebound.post("/v1/chat/completions", json={"model": "secondbrain", "messages": []}),
        await rebound.post("/mcp", json=MCP_LIST_TOOLS, headers=MCP_HEADERS),
        await rebound.get("/"),
    ):
        assert refused.status_code == 403, refused.text
        assert FOREIGN_HOST_REFUSAL in refused.text
    # grpc-web, which Envoy sends to the services themselves, not through the shim.
    grpc_web = {"content-type": "application/grpc-web+proto", "x-grpc-web": "1"}
    reply = await rebound.post(OPTIONS, content=frame(chat.GetOptionsRequest()), headers=grpc_web)
    assert reply.status_code == 403, reply.headers
    assert reply.headers["grpc-status"] == "7", reply.headers  # PERMISSION_DENIED, as grpc-web clients read it
    assert "no API token" in unquote(reply.headers["grpc-message"]), reply.headers
    # Under the name localhost too, with its port.
    named = gateway.client(gateway.envoy_url, host=f"localhost:{gateway.envoy.port}")  # type: ignore[union-attr]
    assert (await named.get("/api/chat/options")).status_code == 200


async def test_the_shim_refuses_another_name_and_a_page_of_another_origin(gateway: Gateway) -> None:
    await gateway.start(envoy=False)
    shim = gateway.client(gateway.shim_url)
    assert (await shim.get("/api/chat/options")).status_code == 200
    assert (await shim.get("/api/chat/options", headers={"origin": "http://localhost:5173"})).status_code == 200
    # Our own page's POST: its no-referrer policy makes the browser send `Origin: null`, saying it is same-origin.
    own_page = {"origin": "null", "sec-fetch-site": "same-origin"}
    assert (await shim.post("/api/retrieve", json={"query": "kitchen"}, headers=own_page)).status_code != 403
    rebound = {"host": FOREIGN}
    cross_site = {"origin": "https://evil.example", "content-type": "text/plain"}
    for refused in (
        await shim.get("/api/chat/options", headers=rebound),
        await shim.get("/api/chat/settings", headers=rebound),
        await shim.post("/mcp", json=MCP_LIST_TOOLS, headers={**MCP_HEADERS, **rebound}),
        await shim.post("/api/chat/conversations", content=b'{"title": "planted"}', headers=cross_site),
        await shim.post("/api/retrieve", content=b'{"query": "kitchen"}', headers={**cross_site, "origin": "null"}),
        await shim.post(
            "/api/retrieve", content=b'{"query": "kitchen"}', headers={**own_page, "sec-fetch-site": "cross-site"}
        ),
    ):
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["message"] == FOREIGN_HOST_REFUSAL
    # /v1 answers in OpenAI's shape, which its clients read.
    completions = await shim.post(
        "/v1/chat/completions",
        content=b'{"model": "secondbrain", "messages": [{"role": "user", "content": "worktop"}]}',
        headers=cross_site,
    )
    assert completions.status_code == 403
    assert completions.json()["error"]["message"] == FOREIGN_HOST_REFUSAL
    # Nothing was stored by the refused POST, and a health probe needs no name.
    listed = (await shim.get("/api/chat/conversations")).json()
    assert not any(c.get("title") == "planted" for c in listed.get("conversations", []))
    assert (await shim.get("/healthz", headers=rebound)).status_code == 200


async def test_with_a_token_the_token_decides_whatever_the_name(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECONDBRAIN_API_TOKEN", TOKEN)
    await gateway.chat.configure()
    await gateway.start()
    for base in (gateway.envoy_url, gateway.shim_url):
        named = gateway.client(base, host="notes.example.org")
        assert (await named.get("/api/chat/options")).status_code == 401
        granted = await named.get("/api/chat/options", headers={"authorization": f"Bearer {TOKEN}"})
        assert granted.status_code == 200, granted.text


def test_the_local_gateway_serves_loopback_names_only_without_a_token() -> None:
    assert local_layout(Settings()).loopback_names_only
    assert not local_layout(Settings(api_token=TOKEN)).loopback_names_only
    hosts = yaml.safe_load(render(local_layout(Settings())))["static_resources"]["listeners"][0]["filter_chains"][0]
    manager = hosts["filters"][0]["typed_config"]
    # A silent client connection is closed within a minute (Envoy's default, an hour, let a probe hold every slot).
    assert manager["common_http_protocol_options"]["idle_timeout"] == "60s"
    assert manager["strip_any_host_port"] is True
    route_config = manager["route_config"]
    assert [host["domains"] for host in route_config["virtual_hosts"]] == [list(LOOPBACK_NAMES), ["*"]]
    opened = yaml.safe_load(render(local_layout(Settings(api_token=TOKEN))))["static_resources"]["listeners"][0]
    assert [h["domains"] for h in opened["filter_chains"][0]["filters"][0]["typed_config"]["route_config"][
        "virtual_hosts"
    ]] == [["*"]]  # fmt: skip
