"""A chat service on port 0, talking over gRPC to a real retrieve service on port 0, over a real PostgreSQL whose
index the real ingest pipeline built.

Three local wire servers stand in for the paid APIs, so the real SDKs run: one speaks OpenAI's API for the
embeddings of ingest and retrieve (it is the retrieve service's only upstream), and the chat service's LLMs are
another OpenAI server and an Anthropic server of their own, so a script pushed for the answer is never consumed by
an embedding request.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from secondbrain.chat.app import Chat
from secondbrain.chat.server import build_chat
from secondbrain.chat.server import create_server as create_chat_server
from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.chat.v1 import chat_service_pb2_grpc as pb_grpc
from secondbrain.config import load_config
from secondbrain.db import Database
from secondbrain.ingest.server import build_ingestor
from secondbrain.providers import RetryPolicy
from secondbrain.retrieve.server import build_retriever
from secondbrain.retrieve.server import create_server as create_retrieve_server
from secondbrain.service.auth import open_channel
from secondbrain.service.runner import ServiceDeps
from secondbrain.service.server import RunningServer
from tests.environment import own_setting
from tests.wire import AnthropicServer, OpenAIServer, RecordedRequest

EMBEDDING_KEY = "sk-test-embeddings-0123456789"
OPENAI_KEY = "sk-test-chat-openai-0123456789"
ANTHROPIC_KEY = "sk-ant-test-chat-0123456789"
# Retries kept short, so a scripted 500 gives up in a fraction of a second rather than 30 s.
FAST_RETRY = RetryPolicy(attempts=2, deadline_seconds=3.0, base_delay_seconds=0.05, max_delay_seconds=0.1)

NOTES = {
    "Projects/Garden.md": (
        "# Garden\n\n## Watering\n\nWater the tomatoes every morning before nine. The basil needs less water than "
        "the tomatoes.\n\n## Soil\n\nThe raised beds use a mix of compost and loam.\n"
    ),
    "Travel.md": "# Travel\n\nThe Lisbon trip is booked for May. We stay in Alfama near the castle.\n",
    "Recipes/Bread.md": "# Bread\n\nThe sourdough starter is fed twice a day with rye flour.\n",
}
GARDENER = """---
name: Gardener
role: Answers like a patient head gardener.
---
Speak as a head gardener with forty years in kitchen gardens. Mention the season when it matters.
"""


def vault_settings(**sections: Any) -> dict[str, Any]:
    """The vault's secondbrain.json: openai embeddings, no condensing (no LLM on retrieve's side), openai chat."""
    base: dict[str, Any] = {
        "embedding": {"provider": "openai"},
        "retrieve": {"condense": False},
        "chat": {"default_provider": "openai"},
    }
    for name, value in sections.items():
        base[name] = {**base.get(name, {}), **value}
    return base


@dataclass
class ChatStack:
    vault: Path
    db: Database
    embedder: OpenAIServer
    llm: OpenAIServer
    claude: AnthropicServer
    stub: pb_grpc.ChatServiceStub = field(init=False)
    retrieve_address: str = ""
    chat_address: str = ""
    _retrieve: RunningServer | None = None
    _chat: RunningServer | None = None
    _chat_logic: Chat | None = None
    _channel: grpc.aio.Channel | None = None

    # -- the vault and its index --------------------------------------------------------------------------------

    def write(self, path: str, text: str) -> None:
        target = self.vault / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def retrieve_env(self) -> dict[str, str]:
        return {"OPENAI_API_KEY": EMBEDDING_KEY, "OPENAI_BASE_URL": self.embedder.base_url}

    def chat_env(self) -> dict[str, str]:
        return {
            "OPENAI_API_KEY": OPENAI_KEY,
            "OPENAI_BASE_URL": self.llm.base_url,
            "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
            "ANTHROPIC_BASE_URL": self.claude.base_url,
        }

    async def ingest(self) -> None:
        ingestor = build_ingestor(load_config(), self.db, self.retrieve_env())
        async for _ in ingestor.sync(self.vault):
            pass

    # -- the services -------------------------------------------------------------------------------------------

    async def start_retrieve(self) -> None:
        config = load_config()
        retriever = build_retriever(config, self.db, self.retrieve_env())
        running = await create_retrieve_server("127.0.0.1:0", ServiceDeps(config, self.db), retriever)
        await running.start()
        self._retrieve = running
        self.retrieve_address = f"127.0.0.1:{running.port}"

    async def stop_retrieve(self) -> None:
        if self._retrieve is not None:
            await self._retrieve.stop(grace=0.5)
            self._retrieve = None

    async def start_chat(self, env: dict[str, str] | None = None, **options: Any) -> None:
        """(Re)start the chat service with the vault's current settings; `options` go to build_chat."""
        await self.stop_chat()
        config = load_config()
        options.setdefault("retry", FAST_RETRY)
        self._chat_logic = build_chat(
            config,
            self.db,
            self.chat_env() if env is None else env,
            retrieve_address=self.retrieve_address,
            **options,
        )
        running = await create_chat_server("127.0.0.1:0", ServiceDeps(config, self.db), self._chat_logic)
        await running.start()
        self._chat = running
        self.chat_address = f"127.0.0.1:{running.port}"
        self._channel = open_channel(self.chat_address, load_config().settings.token)
        self.stub = pb_grpc.ChatServiceStub(self._channel)

    async def stop_chat(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
        if self._chat is not None:
            await self._chat.stop(grace=0.5)
            self._chat = None
        if self._chat_logic is not None:
            await self._chat_logic.close()
            self._chat_logic = None

    async def configure(self, **sections: Any) -> None:
        """Rewrite the vault's secondbrain.json and restart both services with it."""
        (self.vault / "secondbrain.json").write_text(json.dumps(vault_settings(**sections)))
        await self.stop_retrieve()
        await self.start_retrieve()
        await self.start_chat()

    # -- the API --------------------------------------------------------------------------------------------------

    async def conversation(self, title: str = "", persona_id: str = "") -> pb.Conversation:
        reply = await self.stub.CreateConversation(
            pb.CreateConversationRequest(title=title, persona_id=persona_id), timeout=10
        )
        return reply.conversation

    async def send(self, conversation_id: str, content: str, **fields: Any) -> list[pb.SendMessageResponse]:
        request = pb.SendMessageRequest(conversation_id=conversation_id, content=content, **fields)
        return [event async for event in self.stub.SendMessage(request, timeout=30)]

    async def get(self, conversation_id: str) -> pb.Conversation:
        reply = await self.stub.GetConversation(pb.GetConversationRequest(id=conversation_id), timeout=10)
        return reply.conversation

    async def ask(self, content: str, conversation_id: str = "") -> tuple[str, list[pb.SendMessageResponse]]:
        """Send `content` in `conversation_id` (a new conversation when empty); its id and the turn's events."""
        conversation_id = conversation_id or (await self.conversation()).id
        return conversation_id, await self.send(conversation_id, content)

    def answer_requests(self, server: OpenAIServer | AnthropicServer | None = None) -> list[RecordedRequest]:
        """The requests an LLM server got for answers (chat completions or messages)."""
        server = server or self.llm
        return [r for r in server.requests if r.path.endswith(("/chat/completions", "/messages"))]


def kinds(events: list[pb.SendMessageResponse]) -> list[str]:
    return [str(event.WhichOneof("event")) for event in events]


def text_of(events: list[pb.SendMessageResponse]) -> str:
    return "".join(event.delta.text for event in events if event.WhichOneof("event") == "delta")


async def eventually(check: Any, within: float = 5.0) -> Any:
    """Poll the async `check` until it returns something truthy; fail after `within` seconds."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        result = await check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not true within {within} s")
        await asyncio.sleep(0.05)


@pytest.fixture
async def stack(tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ChatStack]:
    for key in list(os.environ):
        if own_setting(key):
            monkeypatch.delenv(key)
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "secondbrain.json").write_text(json.dumps(vault_settings()))
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("SECONDBRAIN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SECONDBRAIN_VAULT", str(vault))
    async with (
        OpenAIServer(dimensions=1536) as embedder,
        OpenAIServer() as llm,
        AnthropicServer() as claude,
    ):
        db = await Database.open(load_config().settings)
        handle = ChatStack(vault, db, embedder, llm, claude)
        try:
            for path, text in NOTES.items():
                handle.write(path, text)
            handle.write(".claude/agents/gardener.md", GARDENER)
            await handle.ingest()
            await handle.start_retrieve()
            await handle.start_chat()
            yield handle
        finally:
            await handle.stop_chat()
            await handle.stop_retrieve()
            await db.close()
