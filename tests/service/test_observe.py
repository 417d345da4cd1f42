"""What the services report about themselves: Prometheus metrics per RPC and per retrieval stage, provider latency
and tokens, and one request id carried from Envoy through the shim, chat and retrieve onto their log lines."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import REGISTRY, generate_latest

from tests.chat.conftest import stack  # noqa: F401 - the fixtures this module builds on
from tests.gateway.conftest import Gateway, gateway  # noqa: F401


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def total(name: str, **labels: str) -> float:
    """The sum over every sample of `name` whose labels include `labels`."""
    return sum(
        s.value
        for metric in REGISTRY.collect()
        for s in metric.samples
        if s.name == name and labels.items() <= s.labels.items()
    )


async def test_a_turn_is_counted_timed_and_logged_under_one_request_id_end_to_end(
    gateway: Gateway,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    send = "/secondbrain.chat.v1.ChatService/SendMessage"
    retrieve = "/secondbrain.retrieve.v1.RetrieveService/Retrieve"
    before = {
        "send": sample("secondbrain_rpc_requests_total", method=send, code="OK"),
        "retrieve": sample("secondbrain_rpc_requests_total", method=retrieve, code="OK"),
        "embed": sample("secondbrain_retrieve_stage_seconds_count", stage="embed"),
        "output": total("secondbrain_provider_tokens_total", provider="openai", kind="output"),
    }
    client = gateway.client(gateway.envoy_url)
    conversation = (await client.post("/api/chat/conversations", json={})).json()["conversation"]["id"]
    caplog.set_level(logging.INFO, logger="secondbrain.service.observe")
    answered = await client.post(
        f"/api/chat/conversations/{conversation}/messages", json={"content": "How often do I water?"}
    )
    assert answered.status_code == 200 and "event: done" in answered.text
    request_id = answered.headers["x-request-id"]  # made by Envoy, passed on by the shim

    served = {r.method: r.request_id for r in caplog.records if r.getMessage() == "rpc"}
    assert served[send] == request_id and served[retrieve] == request_id, served

    assert sample("secondbrain_rpc_requests_total", method=send, code="OK") == before["send"] + 1
    assert sample("secondbrain_rpc_requests_total", method=retrieve, code="OK") == before["retrieve"] + 1
    assert sample("secondbrain_retrieve_stage_seconds_count", stage="embed") == before["embed"] + 1
    assert total("secondbrain_provider_tokens_total", provider="openai", kind="output") > before["output"]
    text = generate_latest().decode()
    assert "secondbrain_rpc_duration_seconds_bucket" in text and "secondbrain_provider_first_token_seconds" in text


async def test_refusals_are_counted_by_their_code(gateway: Gateway) -> None:  # noqa: F811
    method = "/secondbrain.chat.v1.ChatService/GetConversation"
    before = sample("secondbrain_rpc_requests_total", method=method, code="INVALID_ARGUMENT")
    response = await gateway.client(gateway.envoy_url).get("/api/chat/conversations/not-a-uuid")
    assert response.status_code == 400
    assert sample("secondbrain_rpc_requests_total", method=method, code="INVALID_ARGUMENT") == before + 1


async def test_metrics_are_not_served_to_browsers_through_envoy(gateway: Gateway) -> None:  # noqa: F811
    client = gateway.client(gateway.envoy_url)
    for path in ("/metrics", "/%6Detrics", "//metrics", "/api/../metrics"):
        assert (await client.get(f"{gateway.envoy_url}{path}")).status_code == 404, path
    assert "secondbrain_http_requests_total" in (await gateway.client(gateway.shim_url).get("/metrics")).text
