"""IngestService over gRPC: proto <-> domain only. Errors are mapped by secondbrain.service.error_mapping."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from secondbrain.ingest.v1 import ingest_service_pb2 as pb
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from secondbrain.service.runner import ServiceDeps
from secondbrain.service.unbuilt import not_built

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["IngestService"].full_name


class IngestServicer(pb_grpc.IngestServiceServicer):
    def __init__(self, deps: ServiceDeps) -> None:
        self.deps = deps

    async def SyncVault(
        self, request: pb.SyncVaultRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.SyncVaultResponse]:
        raise not_built("IngestService.SyncVault")
        yield  # unreachable: makes this an async generator, the shape of a streaming handler

    async def UpsertNote(
        self, request: pb.UpsertNoteRequest, context: grpc.aio.ServicerContext
    ) -> pb.UpsertNoteResponse:
        raise not_built("IngestService.UpsertNote")

    async def DeleteNote(
        self, request: pb.DeleteNoteRequest, context: grpc.aio.ServicerContext
    ) -> pb.DeleteNoteResponse:
        raise not_built("IngestService.DeleteNote")

    async def GetIndexStatus(
        self, request: pb.GetIndexStatusRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetIndexStatusResponse:
        raise not_built("IngestService.GetIndexStatus")
