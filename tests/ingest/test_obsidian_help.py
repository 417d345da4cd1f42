"""End to end on a real vault (Obsidian's own help, from ../shared/data) with the local embedder: every note
indexed, and a second sync embeds nothing."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from secondbrain.config import load_config
from secondbrain.db import Database
from secondbrain.ingest.server import build_ingestor, create_server
from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from secondbrain.service.runner import ServiceDeps

OBSIDIAN_HELP = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "vaults" / "obsidian-help"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not OBSIDIAN_HELP.is_dir(), reason=f"{OBSIDIAN_HELP} is not here"),
    pytest.mark.timeout(900),
]


async def test_obsidian_help_end_to_end_with_the_local_embedder(config, db: Database) -> None:
    # The vault is read-only shared data: configure the service for it without writing into it.
    config = load_config(vault=OBSIDIAN_HELP)
    assert config.vault.embedding.provider == "local"
    running = await create_server("127.0.0.1:0", ServiceDeps(config, db), build_ingestor(config, db))
    await running.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = pb_grpc.IngestServiceStub(channel)
            request = pb.SyncVaultRequest(vault_path=str(OBSIDIAN_HELP))
            first = [event async for event in stub.SyncVault(request, timeout=900)]
            totals = first[-1].done.totals
            notes = sum(1 for _ in OBSIDIAN_HELP.rglob("*.md"))
            assert totals.added == notes == totals.files_seen
            assert totals.failed == 0
            status = await stub.GetIndexStatus(pb.GetIndexStatusRequest())
            assert status.embedding_model.name == "sentence-transformers/all-MiniLM-L6-v2"
            assert status.embedding_model.dimension == 384
            assert status.chunks == status.embedded_chunks == totals.chunks_embedded > notes

            second = [event async for event in stub.SyncVault(request, timeout=120)]
            again = second[-1].done.totals
            assert (again.unchanged, again.chunks_embedded, again.added, again.updated) == (notes, 0, 0, 0)
    finally:
        await running.stop(grace=1)
