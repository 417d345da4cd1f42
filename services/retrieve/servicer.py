"""RetrieveService over gRPC: proto <-> domain only. Errors are mapped by secondbrain.service.error_mapping."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.runner import ServiceDeps
from secondbrain.service.unbuilt import not_built

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["RetrieveService"].full_name


class RetrieveServicer(pb_grpc.RetrieveServiceServicer):
    def __init__(self, deps: ServiceDeps) -> None:
        self.deps = deps

    async def Retrieve(
        self, request: pb.RetrieveRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.RetrieveResponse]:
        raise not_built("RetrieveService.Retrieve")
        yield  # unreachable: makes this an async generator, the shape of a streaming handler

    async def Search(self, request: pb.SearchRequest, context: grpc.aio.ServicerContext) -> pb.SearchResponse:
        raise not_built("RetrieveService.Search")
