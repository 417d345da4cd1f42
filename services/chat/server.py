"""The chat service's server: `create_server` for tests (port 0), `main` for `secondbrain serve chat`."""

from __future__ import annotations

from secondbrain.chat.servicer import SERVICE_NAME, ChatServicer
from secondbrain.chat.v1 import chat_service_pb2_grpc as pb_grpc
from secondbrain.config import Config
from secondbrain.service.runner import ServiceDeps, serve
from secondbrain.service.server import RunningServer, ServiceBinding, build_server


async def create_server(address: str, deps: ServiceDeps) -> RunningServer:
    servicer = ChatServicer(deps)
    return await build_server(
        address, [ServiceBinding(SERVICE_NAME, servicer, pb_grpc.add_ChatServiceServicer_to_server)]
    )


async def main(config: Config, port: int | None = None) -> None:
    await serve("chat", config, create_server, port)
