"""With SECONDBRAIN_API_TOKEN set, nothing answers without it: not Envoy, not the shim, not a service's own port.
Health checks stay open for probes."""

from __future__ import annotations

import grpc
import pytest

from secondbrain.chat.v1 import chat_service_pb2 as chat
from secondbrain.chat.v1 import chat_service_pb2_grpc as chat_grpc
from secondbrain.service.auth import token_matches
from secondbrain.service.health_client import check_health
from tests.gateway.conftest import Gateway
from tests.gateway.grpc_web import call
from tests.wire import Reply

TOKEN = "s3cret-token-for-tests-0123456789"
OPTIONS = "/secondbrain.chat.v1.ChatService/GetOptions"


@pytest.fixture
async def guarded(gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> Gateway:
    """The whole stack restarted with a token configured."""
    monkeypatch.setenv("SECONDBRAIN_API_TOKEN", TOKEN)
    await gateway.chat.configure()
    await gateway.start()
    return gateway


def test_the_token_comparison() -> None:
    # The scheme in any case, and any run of spaces or tabs after it (RFC 6750; the header is often hand-typed).
    for presented in [
        f"Bearer {TOKEN}",
        f"  Bearer {TOKEN} ",
        f"bearer {TOKEN}",
        f"BEARER  {TOKEN}",
        f"Bearer\t{TOKEN}",
    ]:
        assert token_matches(presented, TOKEN), presented
    for presented in [
        None, "", TOKEN, f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x", f"Basic {TOKEN}", "Bearer", f"Bearer{TOKEN}",
        f"Bearer {TOKEN} {TOKEN}", f"Bearer\n{TOKEN}",
    ]:  # fmt: skip
        assert not token_matches(presented, TOKEN), presented


@pytest.mark.parametrize("header", [None, "Bearer wrong", f"Basic {TOKEN}"])
async def test_the_shim_refuses_a_request_without_the_token(guarded: Gateway, header: str | None) -> None:
    headers = {"authorization": header} if header else {}
    client = guarded.client(guarded.shim_url, **headers)
    for method, path in [("GET", "/api/chat/options"), ("POST", "/api/retrieve")]:
        response = await client.request(method, path, json={} if method == "POST" else None)
        assert response.status_code == 401, (path, response.text)
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert "SECONDBRAIN_API_TOKEN" in response.json()["error"]["message"]
    assert (await client.get("/healthz")).status_code == 200, "liveness stays open for probes"


async def test_the_shim_serves_a_request_with_the_token(guarded: Gateway) -> None:
    guarded.chat.llm.script.push(Reply(deltas=["Every morning [1]."]))
    client = guarded.client(guarded.shim_url, authorization=f"Bearer {TOKEN}")
    assert (await client.get("/api/chat/options")).status_code == 200
    conversation = (await client.post("/api/chat/conversations", json={})).json()["conversation"]
    response = await client.post(
        f"/api/chat/conversations/{conversation['id']}/messages", json={"content": "How often do I water?"}
    )
    assert "event: done" in response.text, "the shim's own calls to chat, and chat's to retrieve, carry the token"


async def test_envoy_refuses_grpc_web_without_the_token(guarded: Gateway) -> None:
    client = guarded.client(guarded.envoy_url)
    refused = await call(client, OPTIONS, chat.GetOptionsRequest())
    assert refused.grpc_status == grpc.StatusCode.UNAUTHENTICATED.value[0]
    assert "Authorization: Bearer" in refused.grpc_message
    wrong = await call(client, OPTIONS, chat.GetOptionsRequest(), headers={"authorization": "Bearer nope"})
    assert wrong.grpc_status == grpc.StatusCode.UNAUTHENTICATED.value[0]
    allowed = await call(client, OPTIONS, chat.GetOptionsRequest(), headers={"authorization": f"Bearer {TOKEN}"})
    assert allowed.grpc_status == 0 and allowed.decode(chat.GetOptionsResponse)[0].providers
    rest = await client.get("/api/chat/options")
    assert rest.status_code == 401, "the REST API through Envoy needs it too"


async def test_a_service_port_refuses_a_call_without_the_token_but_answers_health(guarded: Gateway) -> None:
    address = guarded.chat.chat_address
    async with grpc.aio.insecure_channel(address) as channel:
        stub = chat_grpc.ChatServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetOptions(chat.GetOptionsRequest(), timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.aio.AioRpcError) as refused_stream:
            async for _ in stub.SendMessage(chat.SendMessageRequest(conversation_id="x", content="y"), timeout=5):
                pass
        assert refused_stream.value.code() == grpc.StatusCode.UNAUTHENTICATED
        reply = await stub.GetOptions(
            chat.GetOptionsRequest(), timeout=5, metadata=(("authorization", f"Bearer {TOKEN}"),)
        )
        assert reply.providers
    for address in (guarded.chat.chat_address, guarded.chat.retrieve_address, guarded.ingest_address):
        assert await check_health(address) == "SERVING"
