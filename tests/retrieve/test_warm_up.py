"""Retrieve reports SERVING only once its embedder is loaded, so a readiness probe (or `secondbrain up`) knows the
first question will not wait for the model; it takes calls meanwhile, and a model that cannot load still serves."""

from __future__ import annotations

import asyncio
import io

import numpy as np
from rich.console import Console

from secondbrain.config import Config
from secondbrain.db import Database
from secondbrain.embedding import lookup
from secondbrain.embedding.base import Embedder
from secondbrain.embedding.local import LocalEmbedder
from secondbrain.errors import FailedPrecondition
from secondbrain.retrieve.server import build_retriever, create_server
from secondbrain.retrieve.servicer import SERVICE_NAME
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.access import connect
from secondbrain.service.health_client import check_health
from secondbrain.service.runner import ServiceDeps


class Loading(Embedder):
    """A local model whose load ends when the test says, with success or with an error."""

    def __init__(self) -> None:
        super().__init__(lookup("local", None))
        self.release = asyncio.Event()
        self.error: Exception | None = None

    async def ensure_ready(self) -> None:
        await self.release.wait()
        if self.error is not None:
            raise self.error

    async def _embed(self, texts: list[str], prefix: str) -> np.ndarray:
        await self.ensure_ready()
        return np.ones((len(texts), 384), dtype=np.float32) / np.sqrt(384)


async def statuses_until_released(config: Config, db: Database, embedder: Loading) -> tuple[str, str, str]:
    retriever = build_retriever(config, db)
    retriever.embedder = embedder
    running = await create_server("127.0.0.1:0", ServiceDeps(config, db), retriever)
    await running.start()
    address = f"127.0.0.1:{running.port}"
    try:
        await asyncio.sleep(0.2)
        loading = await check_health(address, SERVICE_NAME)
        overall = await check_health(address)
        embedder.release.set()
        for _ in range(50):
            if (ready := await check_health(address, SERVICE_NAME)) == "SERVING":
                break
            await asyncio.sleep(0.1)
        return loading, overall, ready
    finally:
        await running.stop(grace=1)


async def test_serving_once_the_model_is_loaded(config: Config, db: Database) -> None:
    assert await statuses_until_released(config, db, Loading()) == ("NOT_SERVING", "NOT_SERVING", "SERVING")


async def test_a_model_that_cannot_load_does_not_keep_retrieval_from_serving(config: Config, db: Database) -> None:
    embedder = Loading()
    embedder.error = FailedPrecondition("the model files are missing")
    assert await statuses_until_released(config, db, embedder) == ("NOT_SERVING", "NOT_SERVING", "SERVING")


async def test_a_command_waits_for_a_service_still_loading(config: Config, db: Database) -> None:
    embedder = Loading()
    retriever = build_retriever(config, db)
    retriever.embedder = embedder
    running = await create_server("127.0.0.1:0", ServiceDeps(config, db), retriever)
    await running.start()
    address = f"127.0.0.1:{running.port}"
    said = io.StringIO()
    try:
        asyncio.get_running_loop().call_later(1.0, embedder.release.set)
        async with connect(config, "retrieve", address, pb_grpc.RetrieveServiceStub, Console(file=said)) as stub:
            assert embedder.release.is_set(), "connected before the service was ready"
            reply = await stub.Search(pb.SearchRequest(query="alpha", mode=pb.SEARCH_MODE_KEYWORD), timeout=10)
        assert list(reply.hits) == [] and said.getvalue() == ""
    finally:
        await running.stop(grace=1)


def test_the_retriever_embeds_queries_with_threads_that_sleep_between_passes(config: Config, db: Database) -> None:
    embedder = build_retriever(config, db).embedder
    assert isinstance(embedder, LocalEmbedder) and embedder.serves_queries
