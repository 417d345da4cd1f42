"""The ingest service's server: `create_server` for tests (port 0), `main` for `secondbrain serve ingest`."""

from __future__ import annotations

from secondbrain.config import Config
from secondbrain.ingest.servicer import SERVICE_NAME, IngestServicer
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from secondbrain.service.runner import ServiceDeps, serve
from secondbrain.service.server import RunningServer, ServiceBinding, build_server


async def create_server(address: str, deps: ServiceDeps) -> RunningServer:
    servicer = IngestServicer(deps)
    return await build_server(
        address, [ServiceBinding(SERVICE_NAME, servicer, pb_grpc.add_IngestServiceServicer_to_server)]
    )


async def main(config: Config, port: int | None = None) -> None:
    await serve("ingest", config, create_server, port)
