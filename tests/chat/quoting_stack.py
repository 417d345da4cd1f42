"""The quoting provider's own stack, for tests that read its answers: the real ingest (the local embedder), retrieve and
chat services over a vault on disk, with no API key, so the quoting provider answers."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from secondbrain.chat.app import Chat
from secondbrain.chat.server import build_chat
from secondbrain.chat.server import create_server as create_chat_server
from secondbrain.chat.v1 import chat_service_pb2_grpc as pb_grpc
from secondbrain.config import load_config
from secondbrain.db import Database
from secondbrain.ingest.server import build_ingestor
from secondbrain.retrieve.server import build_retriever
from secondbrain.retrieve.server import create_server as create_retrieve_server
from secondbrain.service.auth import open_channel
from secondbrain.service.runner import ServiceDeps
from secondbrain.service.server import RunningServer
from tests.environment import own_setting


@contextlib.asynccontextmanager
async def quoting_chat(
    vault: Path, data_dir: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[pb_grpc.ChatServiceStub]:
    """`vault` (its notes written) indexed, and a chat client of services answering from it by quoting."""
    for key in list(os.environ):
        if own_setting(key):
            monkeypatch.delenv(key)
    settings = {"embedding": {"provider": "local"}, "chat": {"default_provider": "extractive"}}
    (vault / "secondbrain.json").write_text(json.dumps(settings))
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECONDBRAIN_DATA_DIR", str(data_dir))
    monkeypatch.setenv("SECONDBRAIN_VAULT", str(vault))
    config = load_config()
    db = await Database.open(config.settings)
    retrieve: RunningServer | None = None
    chat: RunningServer | None = None
    logic: Chat | None = None
    channel: grpc.aio.Channel | None = None
    try:
        async for _ in build_ingestor(config, db, {}).sync(vault):
            pass
        retrieve = await create_retrieve_server("127.0.0.1:0", ServiceDeps(config, db), build_retriever(config, db, {}))
        await retrieve.start()
        logic = build_chat(config, db, {}, retrieve_address=f"127.0.0.1:{retrieve.port}")
        chat = await create_chat_server("127.0.0.1:0", ServiceDeps(config, db), logic)
        await chat.start()
        channel = open_channel(f"127.0.0.1:{chat.port}", config.settings.token)
        yield pb_grpc.ChatServiceStub(channel)
    finally:
        if channel is not None:
            await channel.close()
        if chat is not None:
            await chat.stop(grace=0.5)
        if logic is not None:
            await logic.close()
        if retrieve is not None:
            await retrieve.stop(grace=0.5)
        await db.close()
