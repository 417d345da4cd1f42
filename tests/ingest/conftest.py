"""An ingest service on port 0 over a real PostgreSQL, embedding through a local server that speaks OpenAI's API.

The wire server makes embedding fast and countable (each request is recorded), while the real `openai` SDK runs.
The local model has its own tests; `test_obsidian_help.py` runs it end to end.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from secondbrain.config import Config, load_config
from secondbrain.db import Database
from secondbrain.ingest.server import build_ingestor, create_server
from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from secondbrain.service.runner import ServiceDeps
from tests.environment import own_setting
from tests.wire import OpenAIServer

EMBEDDING_DIMENSION = 1536  # text-embedding-3-small, the openai embedder's default model

ARCHITECTURE_NOTE = """# Architecture

## Storage

Everything lives in one PostgreSQL.
"""


@dataclass
class Vault:
    root: Path

    def write(self, path: str, text: str) -> Path:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return target

    def configure(self, **sections: dict) -> None:
        self.write("secondbrain.json", json.dumps(sections))


@dataclass
class Ingest:
    """A running ingest service, its stub, the embedding server behind it, and the vault it reads."""

    stub: pb_grpc.IngestServiceStub
    embedder: OpenAIServer
    vault: Vault
    db: Database
    restart: Callable[..., object] = field(repr=False, default=lambda: None)
    port: int = 0

    async def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def sync(self, force: bool = False) -> list[pb.SyncVaultResponse]:
        request = pb.SyncVaultRequest(vault_path=str(self.vault.root), force=force)
        return [event async for event in self.stub.SyncVault(request, timeout=120)]

    def embedded_texts(self) -> list[str]:
        return embedded_texts(self.embedder)


def embedded_texts(server: OpenAIServer) -> list[str]:
    """Every text `server` has been asked to embed, in order."""
    texts: list[str] = []
    for request in server.requests:
        if request.path.endswith("/embeddings"):
            value = request.json["input"]
            texts.extend([value] if isinstance(value, str) else value)
    return texts


async def failed_reasons(ingest: Ingest) -> dict[str, str]:
    status = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True))
    return {f.path: f.reason for f in status.files if f.state == pb.FILE_STATE_FAILED}


async def chunks_of(ingest: Ingest, path: str) -> list[dict]:
    async with ingest.db.pool.acquire() as connection:
        rows = await connection.fetch(
            """SELECT c.chunk_index, c.heading_path, c.start_line, c.end_line, c.content,
                      vector_dims(c.embedding) AS dims
               FROM vault_chunks c JOIN vault_files f ON f.id = c.file_id WHERE f.path = $1 ORDER BY c.chunk_index""",
            path,
        )
    return [dict(row) for row in rows]


def files(events: list[pb.SyncVaultResponse]) -> dict[str, pb.FileProgress]:
    return {event.file.path: event.file for event in events if event.WhichOneof("event") == "file"}


def write_raw(root: Path, relative: bytes, content: bytes = b"# Note\n") -> bytes:
    """Write `content` to a file whose vault-relative name is raw bytes, as Linux allows (folders are created);
    returns the file's absolute name in bytes."""
    target = os.fsencode(root) + b"/" + relative
    Path(os.fsdecode(target)).parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(descriptor, content)
    finally:
        os.close(descriptor)
    return target


def embedding_env(server: OpenAIServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-test-embeddings-0123456789", "OPENAI_BASE_URL": server.base_url}


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    root = tmp_path / "vault"
    root.mkdir()
    made = Vault(root)
    made.configure(embedding={"provider": "openai", "batch_size": 16})
    return made


@pytest.fixture
def ingest_environment(vault: Vault, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment an ingest process reads: the test database and vault, nothing from the developer's own."""
    for key in list(os.environ):
        if own_setting(key):
            monkeypatch.delenv(key)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECONDBRAIN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SECONDBRAIN_VAULT", str(vault.root))


@pytest.fixture
async def ingest(vault: Vault, ingest_environment: None) -> AsyncIterator[Ingest]:
    async with OpenAIServer(dimensions=EMBEDDING_DIMENSION) as server:
        config = load_config()
        db = await Database.open(config.settings)
        running = None
        channel = None

        async def start(config: Config = config) -> pb_grpc.IngestServiceStub:
            nonlocal running, channel
            await stop()
            ingestor = build_ingestor(config, db, embedding_env(server))
            running = await create_server("127.0.0.1:0", ServiceDeps(config=config, db=db), ingestor)
            await running.start()
            channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
            return pb_grpc.IngestServiceStub(channel)

        async def stop() -> None:
            if channel is not None:
                await channel.close()
            if running is not None:
                await running.stop(grace=1)

        handle = Ingest(await start(), server, vault, db)
        handle.port = running.port

        async def restart(**vault_sections: dict) -> None:
            if vault_sections:
                vault.configure(**vault_sections)
            handle.stub = await start(load_config())
            handle.port = running.port

        handle.restart = restart
        try:
            yield handle
        finally:
            await stop()
            await db.close()
