"""Wrong tokens are slowed on every door that checks the token (issue 47, friction 1: 5,000 guesses took 3.1 s): after
TOKEN_GUESSES_ALLOWED wrong ones from a client, its requests are refused whatever token they carry, while a client at
another address is served. Through the real Envoy, shim and services; each test guesses from loopback addresses of
its own (Linux answers all of 127.0.0.0/8), so the clients are told apart as they would be on a network."""

from __future__ import annotations

import grpc
import httpx2
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from secondbrain.chat.v1 import chat_service_pb2 as chat
from secondbrain.chat.v1 import chat_service_pb2_grpc as chat_grpc
from secondbrain.retrieve.v1 import retrieve_service_pb2 as retrieve
from secondbrain.service.listener_bounds import TOKEN_GUESS_REFUSAL_SECONDS, TOKEN_GUESSES_ALLOWED
from tests.gateway.conftest import Gateway
from tests.gateway.grpc_web import call

TOKEN = "s3cret-token-for-tests-0123456789"
RIGHT = {"authorization": f"Bearer {TOKEN}"}
WRONG = {"authorization": "Bearer a-guess-at-the-token-0000"}
OPTIONS = "/secondbrain.chat.v1.ChatService/GetOptions"
RETRIEVE = "/secondbrain.retrieve.v1.RetrieveService/Retrieve"
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED.value[0]
RESOURCE_EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]


@pytest.fixture
async def guarded(gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> Gateway:
    """The whole stack restarted with a token configured."""
    monkeypatch.setenv("SECONDBRAIN_API_TOKEN", TOKEN)
    await gateway.chat.configure()
    await gateway.start()
    return gateway


def client_at(gateway: Gateway, base_url: str, source: str, **headers: str) -> httpx2.AsyncClient:
    """A client whose connections come from `source`, closed with the fixture."""
    transport = httpx2.AsyncHTTPTransport(local_address=source)
    client = httpx2.AsyncClient(base_url=base_url, headers=headers, timeout=30.0, transport=transport)
    gateway.clients.append(client)
    return client


def assert_refused_for_a_while(response: httpx2.Response, client: str) -> None:
    assert response.status_code == 429, response.text
    assert 0 < int(response.headers["retry-after"]) <= TOKEN_GUESS_REFUSAL_SECONDS
    assert f"too many wrong API tokens from {client}" in response.text


async def test_the_shim_refuses_a_guesser_after_the_limit_and_serves_another_client(guarded: Gateway) -> None:
    guesser = client_at(guarded, guarded.shim_url, "127.0.0.2")
    for _ in range(TOKEN_GUESSES_ALLOWED):
        assert (await guesser.get("/api/chat/options", headers=WRONG)).status_code == 401
    assert_refused_for_a_while(await guesser.get("/api/chat/options", headers=WRONG), "127.0.0.2")
    # Refused whatever it sends, the right token too: a guess made meanwhile is never tried.
    assert_refused_for_a_while(await guesser.get("/api/chat/options", headers=RIGHT), "127.0.0.2")
    on_mcp = await guesser.post("/mcp", headers=RIGHT, json={})
    assert_refused_for_a_while(on_mcp, "127.0.0.2")
    on_v1 = await guesser.get("/v1/models", headers=RIGHT)
    assert_refused_for_a_while(on_v1, "127.0.0.2")
    assert on_v1.json()["error"]["type"] == "rate_limit_error", "an OpenAI client reads OpenAI's error shape"

    other = client_at(guarded, guarded.shim_url, "127.0.0.3", **RIGHT)
    assert (await other.get("/api/chat/options")).status_code == 200
    assert (await other.get("/v1/models")).status_code == 200


async def test_requests_without_a_token_are_not_guesses(guarded: Gateway) -> None:
    forgetful = client_at(guarded, guarded.shim_url, "127.0.0.4")
    for _ in range(TOKEN_GUESSES_ALLOWED + 5):
        assert (await forgetful.get("/api/chat/options")).status_code == 401
    assert (await forgetful.get("/api/chat/options", headers=RIGHT)).status_code == 200


async def test_through_envoy_the_shim_counts_whom_envoy_saw_not_envoy(guarded: Gateway) -> None:
    # Every request reaches the shim from Envoy's own loopback hop; its x-forwarded-for names the client.
    guesser = client_at(guarded, guarded.envoy_url, "127.0.0.5", **WRONG)
    for _ in range(TOKEN_GUESSES_ALLOWED):
        assert (await guesser.get("/api/chat/options")).status_code == 401
    assert_refused_for_a_while(await guesser.get("/api/chat/options"), "127.0.0.5")
    other = client_at(guarded, guarded.envoy_url, "127.0.0.6", **RIGHT)
    assert (await other.get("/api/chat/options")).status_code == 200


async def test_grpc_web_guesses_are_refused_by_the_service_and_another_client_is_served(guarded: Gateway) -> None:
    guesser = client_at(guarded, guarded.envoy_url, "127.0.0.7")
    for _ in range(TOKEN_GUESSES_ALLOWED):
        assert (await call(guesser, OPTIONS, chat.GetOptionsRequest(), headers=WRONG)).grpc_status == UNAUTHENTICATED
    refused = await call(guesser, OPTIONS, chat.GetOptionsRequest(), headers=WRONG)
    assert refused.grpc_status == RESOURCE_EXHAUSTED, refused.grpc_message
    assert "too many wrong API tokens from 127.0.0.7" in refused.grpc_message
    assert (await call(guesser, OPTIONS, chat.GetOptionsRequest(), headers=RIGHT)).grpc_status == RESOURCE_EXHAUSTED

    other = client_at(guarded, guarded.envoy_url, "127.0.0.8")
    served = await call(other, OPTIONS, chat.GetOptionsRequest(), headers=RIGHT)
    assert served.grpc_status == 0 and served.decode(chat.GetOptionsResponse)[0].providers
    # A stream too: on retrieve (which has refused no one) for both, then on chat's, whose guesser stays refused.
    question = retrieve.RetrieveRequest(query="sourdough starter", options=retrieve.RetrieveOptions(max_passages=1))
    assert (await call(guesser, RETRIEVE, question, headers=RIGHT)).grpc_status == 0, "each service counts its own"
    assert (await call(other, RETRIEVE, question, headers=RIGHT)).grpc_status == 0
    streamed = await call(
        guesser, "/secondbrain.chat.v1.ChatService/SendMessage", chat.SendMessageRequest(content="hi"), headers=RIGHT
    )
    assert streamed.grpc_status == RESOURCE_EXHAUSTED, streamed.grpc_message


async def test_a_service_port_counts_the_client_its_trusted_proxy_names(guarded: Gateway) -> None:
    # The shim and Envoy reach a service from loopback, a trusted proxy by default, naming the client they served.
    def as_client(address: str, headers: dict[str, str]) -> tuple[tuple[str, str], ...]:
        return (("x-forwarded-for", address), *headers.items())

    async with grpc.aio.insecure_channel(guarded.chat.chat_address) as channel:
        stub = chat_grpc.ChatServiceStub(channel)
        for _ in range(TOKEN_GUESSES_ALLOWED):
            with pytest.raises(grpc.aio.AioRpcError) as wrong:
                await stub.GetOptions(chat.GetOptionsRequest(), metadata=as_client("198.51.100.7", WRONG), timeout=5)
            assert wrong.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetOptions(chat.GetOptionsRequest(), metadata=as_client("198.51.100.7", RIGHT), timeout=5)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "198.51.100.7" in (refused.value.details() or "")
        served = await stub.GetOptions(chat.GetOptionsRequest(), metadata=as_client("198.51.100.8", RIGHT), timeout=5)
        assert served.providers
        # Health stays open to probes, even from the refused client.
        health = health_pb2_grpc.HealthStub(channel)
        checked = await health.Check(
            health_pb2.HealthCheckRequest(), metadata=as_client("198.51.100.7", WRONG), timeout=5
        )
        assert checked.status == health_pb2.HealthCheckResponse.SERVING
