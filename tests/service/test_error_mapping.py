"""Domain errors become the right gRPC status with their message; anything else becomes INTERNAL without leaking."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from secondbrain import errors
from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from secondbrain.service.server import ServiceBinding, build_server

RAISED = {
    "invalid.md": (errors.InvalidInput("path must end in .md"), grpc.StatusCode.INVALID_ARGUMENT),
    "missing.md": (errors.NotFound("no note at missing.md"), grpc.StatusCode.NOT_FOUND),
    "early.md": (errors.FailedPrecondition("sync the vault first"), grpc.StatusCode.FAILED_PRECONDITION),
    "down.md": (errors.Unavailable("the database is down"), grpc.StatusCode.UNAVAILABLE),
    "huge.md": (errors.ResourceExhausted("note too large"), grpc.StatusCode.RESOURCE_EXHAUSTED),
    # A message quoting a long input back: still its own status, cut, not RESOURCE_EXHAUSTED for its size.
    "echo.md": (errors.InvalidInput(f"{'é' * 30_000!r} is not a conversation id"), grpc.StatusCode.INVALID_ARGUMENT),
}


class RaisingServicer(pb_grpc.IngestServiceServicer):
    """Raises whatever the request's path names, from a unary and from a streaming handler."""

    async def UpsertNote(
        self, request: pb.UpsertNoteRequest, context: grpc.aio.ServicerContext
    ) -> pb.UpsertNoteResponse:
        if request.path == "bug.md":
            raise KeyError("secret internal detail")
        if request.path == "abort.md":
            await context.abort(grpc.StatusCode.ALREADY_EXISTS, "aborted by the handler")
        raise RAISED[request.path][0]

    async def SyncVault(
        self, request: pb.SyncVaultRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.SyncVaultResponse]:
        yield pb.SyncVaultResponse(started=pb.SyncStarted(vault_path=request.vault_path, files_seen=1))
        raise RAISED[request.vault_path][0]


@pytest.fixture
async def stub() -> AsyncIterator[pb_grpc.IngestServiceStub]:
    running = await build_server(
        "127.0.0.1:0",
        [
            ServiceBinding(
                "secondbrain.ingest.v1.IngestService", RaisingServicer(), pb_grpc.add_IngestServiceServicer_to_server
            )
        ],
    )
    await running.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
        yield pb_grpc.IngestServiceStub(channel)
    await running.stop(grace=1)


@pytest.mark.parametrize("path", sorted(RAISED))
async def test_unary_domain_error_maps_to_status(stub, path: str) -> None:
    error, code = RAISED[path]
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.UpsertNote(pb.UpsertNoteRequest(path=path, markdown="# x"), timeout=5)
    assert raised.value.code() == code
    if len(str(error)) < 1000:
        assert raised.value.details() == str(error)
    else:
        details = raised.value.details()
        assert str(error).startswith(details[:-1]) and details.endswith("…") and len(details.encode()) <= 1000


@pytest.mark.parametrize("path", ["invalid.md", "down.md"])
async def test_streaming_error_after_first_event_maps_to_status(stub, path: str) -> None:
    events = []
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        async for event in stub.SyncVault(pb.SyncVaultRequest(vault_path=path), timeout=5):
            events.append(event)
    assert [event.WhichOneof("event") for event in events] == ["started"]
    assert raised.value.code() == RAISED[path][1]


async def test_unexpected_error_is_internal_with_an_incident_id_and_no_detail(stub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.UpsertNote(pb.UpsertNoteRequest(path="bug.md"), timeout=5)
    assert raised.value.code() == grpc.StatusCode.INTERNAL
    assert "incident" in raised.value.details()
    assert "secret" not in raised.value.details()


async def test_handler_abort_passes_through(stub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await stub.UpsertNote(pb.UpsertNoteRequest(path="abort.md"), timeout=5)
    assert raised.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert raised.value.details() == "aborted by the handler"
