"""ChatService over gRPC: proto <-> domain only. Errors are mapped by secondbrain.service.error_mapping."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.chat.v1 import chat_service_pb2_grpc as pb_grpc
from secondbrain.service.runner import ServiceDeps
from secondbrain.service.unbuilt import not_built

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["ChatService"].full_name


class ChatServicer(pb_grpc.ChatServiceServicer):
    def __init__(self, deps: ServiceDeps) -> None:
        self.deps = deps

    async def GetOptions(
        self, request: pb.GetOptionsRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetOptionsResponse:
        raise not_built("ChatService.GetOptions")

    async def GetSettings(
        self, request: pb.GetSettingsRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetSettingsResponse:
        raise not_built("ChatService.GetSettings")

    async def UpdateSettings(
        self, request: pb.UpdateSettingsRequest, context: grpc.aio.ServicerContext
    ) -> pb.UpdateSettingsResponse:
        raise not_built("ChatService.UpdateSettings")

    async def ListConversations(
        self, request: pb.ListConversationsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListConversationsResponse:
        raise not_built("ChatService.ListConversations")

    async def CreateConversation(
        self, request: pb.CreateConversationRequest, context: grpc.aio.ServicerContext
    ) -> pb.CreateConversationResponse:
        raise not_built("ChatService.CreateConversation")

    async def GetConversation(
        self, request: pb.GetConversationRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetConversationResponse:
        raise not_built("ChatService.GetConversation")

    async def UpdateConversation(
        self, request: pb.UpdateConversationRequest, context: grpc.aio.ServicerContext
    ) -> pb.UpdateConversationResponse:
        raise not_built("ChatService.UpdateConversation")

    async def DeleteConversation(
        self, request: pb.DeleteConversationRequest, context: grpc.aio.ServicerContext
    ) -> pb.DeleteConversationResponse:
        raise not_built("ChatService.DeleteConversation")

    async def SendMessage(
        self, request: pb.SendMessageRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.SendMessageResponse]:
        raise not_built("ChatService.SendMessage")
        yield  # unreachable: makes this an async generator, the shape of a streaming handler
