"""How a command reaches a service: the running one when it answers, else a real server of its own, in its process,
behind the same interceptors."""

from __future__ import annotations

import io

import grpc
import pytest
from rich.console import Console

from secondbrain.config import Config, load_config
from secondbrain.db import Database
from secondbrain.errors import InvalidInput
from secondbrain.retrieve.server import create_server
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.access import connect
from secondbrain.service.health_client import wait_until_serving
from secondbrain.service.runner import ServiceDeps

TOKEN = "access-test-token-0123456789"


def _console() -> tuple[Console, io.StringIO]:
    text = io.StringIO()
    return Console(file=text, width=200), text


@pytest.fixture
def nothing_running(config: Config, monkeypatch: pytest.MonkeyPatch) -> Config:
    """The configuration with a token, and no retrieve service where it says one is."""
    monkeypatch.setenv("SECONDBRAIN_RETRIEVE_PORT", "9")
    monkeypatch.setenv("SECONDBRAIN_API_TOKEN", TOKEN)
    return load_config()


async def test_with_nothing_running_the_command_serves_itself_behind_the_interceptors(nothing_running: Config) -> None:
    console, said = _console()
    async with connect(nothing_running, "retrieve", None, pb_grpc.RetrieveServiceStub, console) as stub:
        # The token is presented to a server that checks it.
        reply = await stub.Search(pb.SearchRequest(query="alpha", mode=pb.SEARCH_MODE_KEYWORD), timeout=10)
        assert list(reply.hits) == []
        # Refused by the request limits, before any handler: the old in-process path had none.
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.Search(pb.SearchRequest(query="word " * 14_000), timeout=10)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert said.getvalue().strip() == "No retrieve service at 127.0.0.1:9; working in this process."


async def test_an_address_given_means_only_the_service_there(nothing_running: Config) -> None:
    console, said = _console()
    with pytest.raises(InvalidInput, match=r"no retrieve service answers at 127\.0\.0\.1:9$"):
        async with connect(nothing_running, "retrieve", "127.0.0.1:9", pb_grpc.RetrieveServiceStub, console):
            pass
    assert said.getvalue() == ""


async def test_a_running_service_is_used_as_it_is(config: Config, db: Database) -> None:
    running = await create_server("127.0.0.1:0", ServiceDeps(config, db))
    await running.start()
    try:
        console, said = _console()
        address = f"127.0.0.1:{running.port}"
        assert await wait_until_serving(address, 120), "the service's model did not load"
        async with connect(config, "retrieve", address, pb_grpc.RetrieveServiceStub, console) as stub:
            reply = await stub.Search(pb.SearchRequest(query="alpha", mode=pb.SEARCH_MODE_KEYWORD), timeout=10)
        assert list(reply.hits) == [] and said.getvalue() == ""
    finally:
        await running.stop(grace=1)
