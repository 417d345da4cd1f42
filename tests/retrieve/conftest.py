"""A retrieve service on port 0 over a real PostgreSQL whose index the real ingest pipeline built.

One local server speaks OpenAI's API for both embeddings (bag-of-words vectors: texts sharing words are close) and
the condensing LLM; another speaks Cohere's /v1/rerank. The real SDKs run against them.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import grpc
import pytest

from secondbrain.config import load_config
from secondbrain.db import Database
from secondbrain.ingest.server import build_ingestor
from secondbrain.retrieve.server import build_retriever, create_server
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.runner import ServiceDeps
from secondbrain.v1 import retrieval_pb2 as common
from tests.environment import own_setting
from tests.wire import OpenAIServer, RerankServer

KEY = "sk-test-retrieve-0123456789"


@dataclass
class Stack:
    vault: Path
    db: Database
    llm: OpenAIServer
    reranker: RerankServer
    stub: pb_grpc.RetrieveServiceStub
    configure: Callable[..., object]

    def write(self, path: str, text: str) -> None:
        target = self.vault / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    async def ingest(self) -> None:
        config = load_config()
        ingestor = build_ingestor(config, self.db, self.env())
        async for _ in ingestor.sync(self.vault):
            pass

    def env(self) -> dict[str, str]:
        return {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": self.llm.base_url}

    async def retrieve(self, query: str, **options: object) -> tuple[common.RetrievalPlan, list[common.Passage]]:
        filters = options.pop("filters", None)
        history = options.pop("history", [])
        now = str(options.pop("now", ""))
        request = pb.RetrieveRequest(
            query=query, options=pb.RetrieveOptions(**options), filters=filters, history=history, now=now
        )
        events = [event async for event in self.stub.Retrieve(request, timeout=60)]
        assert events[0].WhichOneof("event") == "plan" and events[-1].WhichOneof("event") == "done"
        passages = [event.passage for event in events if event.WhichOneof("event") == "passage"]
        assert events[-1].done.passage_count == len(passages)
        return events[0].plan, passages


def settings_file(**sections: object) -> str:
    base: dict = {"embedding": {"provider": "openai"}, "chat": {"default_provider": "openai"}}
    for name, value in sections.items():
        base[name] = {**base.get(name, {}), **value} if isinstance(value, dict) else value
    return json.dumps(base)


@pytest.fixture
async def stack(tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Stack]:
    for key in list(os.environ):
        if own_setting(key):
            monkeypatch.delenv(key)
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "secondbrain.json").write_text(settings_file())
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECONDBRAIN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SECONDBRAIN_VAULT", str(vault))
    async with OpenAIServer(dimensions=1536) as llm, RerankServer() as reranker:
        db = await Database.open(load_config().settings)
        running = None
        channel = None

        async def start() -> pb_grpc.RetrieveServiceStub:
            nonlocal running, channel
            if channel is not None:
                await channel.close()
            if running is not None:
                await running.stop(grace=1)
            config = load_config()
            retriever = build_retriever(config, db, handle.env())
            running = await create_server("127.0.0.1:0", ServiceDeps(config, db), retriever)
            await running.start()
            channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
            return pb_grpc.RetrieveServiceStub(channel)

        async def configure(**sections: object) -> None:
            (vault / "secondbrain.json").write_text(settings_file(**sections))
            handle.stub = await start()

        handle = Stack(vault, db, llm, reranker, None, configure)  # type: ignore[arg-type]
        handle.stub = await start()
        try:
            yield handle
        finally:
            if channel is not None:
                await channel.close()
            if running is not None:
                await running.stop(grace=1)
            await db.close()


@pytest.fixture
def pool(db: Database) -> asyncpg.Pool:
    """The pool the services use (`secondbrain.db.Database`, pgvector's codec registered on every connection)."""
    return db.pool
