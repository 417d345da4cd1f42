"""The ingest service watching its vault while a SyncVault stream follows it (`watch`): real files changed on disk
are indexed and come down the stream one event each, and GetIndexStatus says what the watcher is doing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest

from secondbrain.ingest import store
from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from tests.ingest.conftest import ARCHITECTURE_NOTE, Ingest


class Follower:
    """A SyncVault stream with `watch`, read event by event."""

    def __init__(self, ingest: Ingest) -> None:
        request = pb.SyncVaultRequest(vault_path=str(ingest.vault.root), watch=True)
        self.call = ingest.stub.SyncVault(request)
        self.events: AsyncIterator[pb.SyncVaultResponse] = self.call.__aiter__()

    async def next(self, within: float = 20) -> pb.SyncVaultResponse:
        return await asyncio.wait_for(self.events.__anext__(), within)

    async def until_done(self) -> list[pb.SyncVaultResponse]:
        seen = [await self.next()]
        while seen[-1].WhichOneof("event") != "done":
            seen.append(await self.next())
        return seen

    async def change(self) -> tuple[str, int]:
        event = await self.next()
        assert event.WhichOneof("event") == "file", event
        return event.file.path, event.file.outcome


@pytest.fixture
async def follower(ingest: Ingest) -> AsyncIterator[Follower]:
    ingest.vault.write("Architecture.md", ARCHITECTURE_NOTE)
    ingest.vault.write("Journal/2026-01-20.md", "# Tuesday\n\nPlanted garlic.\n")
    following = Follower(ingest)
    first = await following.until_done()
    assert first[-1].done.totals.added == 2, "the stream starts with an ordinary sync"
    try:
        yield following
    finally:
        following.call.cancel()


async def status(ingest: Ingest) -> pb.GetIndexStatusResponse:
    return await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(), timeout=10)


async def test_an_edit_a_new_note_and_a_deletion_each_come_down_the_stream(ingest: Ingest, follower: Follower) -> None:
    before = await status(ingest)
    assert before.watching and before.pending_changes == 0
    assert before.HasField("last_change")
    ingest.vault.write("Journal/2026-01-20.md", "# Tuesday\n\nPlanted garlic and shallots.\n")
    assert await follower.change() == ("Journal/2026-01-20.md", pb.FILE_OUTCOME_UPDATED)
    ingest.vault.write("Ideas/Greenhouse.md", "# Greenhouse\n\nA lean-to against the south wall.\n")
    assert await follower.change() == ("Ideas/Greenhouse.md", pb.FILE_OUTCOME_ADDED)
    (ingest.vault.root / "Architecture.md").unlink()
    assert await follower.change() == ("Architecture.md", pb.FILE_OUTCOME_DELETED)
    listed = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True), timeout=10)
    assert sorted(file.path for file in listed.files) == ["Ideas/Greenhouse.md", "Journal/2026-01-20.md"]
    after = await status(ingest)
    assert after.last_change.ToDatetime() > before.last_change.ToDatetime()
    assert after.pending_changes == 0
    # A note the service cannot index is a change too, with its reason.
    (ingest.vault.root / "Broken.md").write_bytes(b"binary\x00note")
    event = await follower.next()
    assert (event.file.path, event.file.outcome) == ("Broken.md", pb.FILE_OUTCOME_FAILED)
    assert "NUL byte" in event.file.error


async def test_changes_wait_as_pending_while_another_sync_runs(ingest: Ingest, follower: Follower) -> None:
    async with ingest.db.pool.acquire() as lock:
        # As a sync elsewhere would (once the first sync, whose stream is already done, has let go of it).
        for _ in range(100):
            if await store.try_lock_sync(lock):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the sync lock was never free")
        try:
            ingest.vault.write("Ideas/Pond.md", "# Pond\n\nA small wildlife pond.\n")
            for _ in range(100):
                if (await status(ingest)).pending_changes == 1:
                    break
                await asyncio.sleep(0.1)
            assert (await status(ingest)).pending_changes == 1
        finally:
            await store.unlock_sync(lock)
    assert await follower.change() == ("Ideas/Pond.md", pb.FILE_OUTCOME_ADDED)
    assert (await status(ingest)).pending_changes == 0


async def test_the_watch_ends_with_its_last_follower(ingest: Ingest, follower: Follower) -> None:
    second = Follower(ingest)
    await second.until_done()
    follower.call.cancel()
    await asyncio.sleep(0.3)
    assert (await status(ingest)).watching, "the second still follows"
    ingest.vault.write("Ideas/Bees.md", "# Bees\n")
    assert await second.change() == ("Ideas/Bees.md", pb.FILE_OUTCOME_ADDED)
    second.call.cancel()
    for _ in range(50):
        if not (await status(ingest)).watching:
            break
        await asyncio.sleep(0.1)
    assert not (await status(ingest)).watching
    # Nothing watches now: a change waits for the next sync.
    ingest.vault.write("Ideas/Wasps.md", "# Wasps\n")
    await asyncio.sleep(1.5)
    listed = await ingest.stub.GetIndexStatus(pb.GetIndexStatusRequest(include_files=True), timeout=10)
    assert "Ideas/Wasps.md" not in {file.path for file in listed.files}


async def test_a_service_no_one_follows_is_not_watching(ingest: Ingest) -> None:
    ingest.vault.write("Architecture.md", ARCHITECTURE_NOTE)
    first = await status(ingest)
    assert not first.watching and first.pending_changes == 0 and not first.HasField("last_change")
    await ingest.sync()
    assert (await status(ingest)).HasField("last_change"), "a sync that added a note changed the index"


async def test_watching_another_folder_than_the_services_is_invalid(ingest: Ingest, tmp_path) -> None:
    request = pb.SyncVaultRequest(vault_path=str(tmp_path / "missing"), watch=True)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        [event async for event in ingest.stub.SyncVault(request, timeout=10)]
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert not (await status(ingest)).watching


async def test_a_file_that_could_not_be_indexed_before_is_not_said_again_at_each_change(
    ingest: Ingest, tmp_path
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n")
    (ingest.vault.root / "Escape.md").symlink_to(outside)
    ingest.vault.write("Architecture.md", ARCHITECTURE_NOTE)
    following = Follower(ingest)
    try:
        first = await following.until_done()
        assert any(e.file.path == "Escape.md" and e.file.outcome == pb.FILE_OUTCOME_FAILED for e in first)
        ingest.vault.write("Ideas.md", "# Ideas\n")
        assert await following.change() == ("Ideas.md", pb.FILE_OUTCOME_ADDED)
        ingest.vault.write("Ideas.md", "# Ideas\n\nMore of them.\n")
        assert await following.change() == ("Ideas.md", pb.FILE_OUTCOME_UPDATED), "not Escape.md's old failure"
    finally:
        following.call.cancel()
