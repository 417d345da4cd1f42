"""The retrieve service's server: `create_server` for tests (port 0), `main` for `secondbrain serve retrieve`."""

from __future__ import annotations

from secondbrain.config import Config
from secondbrain.retrieve.servicer import SERVICE_NAME, RetrieveServicer
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.runner import ServiceDeps, serve
from secondbrain.service.server import RunningServer, ServiceBinding, build_server


async def create_server(address: str, deps: ServiceDeps) -> RunningServer:
    servicer = RetrieveServicer(deps)
    return await build_server(
        address, [ServiceBinding(SERVICE_NAME, servicer, pb_grpc.add_RetrieveServiceServicer_to_server)]
    )


async def main(config: Config, port: int | None = None) -> None:
    await serve("retrieve", config, create_server, port)
