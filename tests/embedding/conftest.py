"""The local model, loaded once per session (it takes seconds), with every network connection refused and recorded.

The offline switches are removed from the environment first, so what keeps the load offline is the embedder's own
doing, not the test's.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from secondbrain.embedding import create_embedder
from secondbrain.embedding.local import LocalEmbedder
from secondbrain.vault_config import EmbeddingSection

OFFLINE_SWITCHES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


@dataclass
class NetworkGuard:
    """Refuses every IP connection and name lookup while active, and remembers who asked for one."""

    attempts: list[str] = field(default_factory=list)

    def connect(self, sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            self.attempts.append(f"connect {address!r}")
            raise OSError("network access is not allowed while loading the local model")
        _real_connect(sock, address)

    def getaddrinfo(self, host: Any, *args: Any, **kwargs: Any) -> Any:
        self.attempts.append(f"resolve {host!r}")
        raise socket.gaierror("name lookups are not allowed while loading the local model")


_real_connect = socket.socket.connect


@contextlib.contextmanager
def refused_network() -> Iterator[NetworkGuard]:
    """Every IP connection and name lookup refused (and recorded), with the offline switches out of the
    environment, so what keeps a load offline is the code's own doing."""
    guard = NetworkGuard()
    with pytest.MonkeyPatch.context() as patch:
        for name in OFFLINE_SWITCHES:
            patch.delenv(name, raising=False)
        patch.setattr(socket.socket, "connect", guard.connect)
        patch.setattr(socket, "getaddrinfo", guard.getaddrinfo)
        yield guard


MIXED_TEXTS = [
    "We chose Postgres with pgvector for storage, because one database is simpler to run.",
    "Résumé of the café meeting: naïve caching was dropped.",
    "def chunk(text: str) -> list[str]:\n    return text.split('\\n\\n')  # paragraphs",
    "東京で会議。数据库的选择。🚀 emoji and CJK",
    "[[Project Atlas]] #decision #storage — see 2026-10-03 notes",
]
"""Prose, accents, code, CJK with an emoji, and Obsidian syntax: the kinds of text a vault holds."""


@dataclass
class LocalLoad:
    """The session's local embedder and what its load did."""

    embedder: LocalEmbedder
    network_attempts: list[str]
    switches_after_load: dict[str, str | None]


@pytest.fixture(scope="session")
async def local_load() -> AsyncIterator[LocalLoad]:
    # The torch runtime: the path sentence-transformers runs, which test_onnx.py holds the ONNX runtime (the default)
    # to; the ONNX export's own load is checked offline there too.
    embedder = create_embedder(EmbeddingSection(provider="local", batch_size=16, runtime="torch"))
    assert isinstance(embedder, LocalEmbedder)
    assert not embedder.loaded, "creating the embedder must not load the model"
    with refused_network() as guard:
        await embedder.ensure_ready()
        switches = {name: os.environ.get(name) for name in OFFLINE_SWITCHES}
    yield LocalLoad(embedder, guard.attempts, switches)
    await embedder.aclose()


@pytest.fixture
def local_embedder(local_load: LocalLoad) -> Iterator[LocalEmbedder]:
    """The session's loaded local embedder, its truncation counter at zero for this test."""
    local_load.embedder.truncated = 0
    yield local_load.embedder
