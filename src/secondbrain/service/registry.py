"""The gRPC services this system runs, by name: the proto service each serves, and the module that builds its server.

The one list that knows them all, outside the services themselves: `serve` and `access` start a service by its name
through it, so no service imports another (chat reaches retrieve over gRPC, and what starts a retrieve server beside
an in-process chat is `access`, reading `calls` here).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Protocol

from secondbrain.chat.v1 import chat_service_pb2
from secondbrain.config import Config
from secondbrain.ingest.v1 import ingest_service_pb2
from secondbrain.retrieve.v1 import retrieve_service_pb2
from secondbrain.service.runner import ServiceDeps
from secondbrain.service.server import RunningServer


class ServerModule(Protocol):
    """What every service's `server` module offers."""

    async def create_server(self, address: str, deps: ServiceDeps, *, one_command: bool = False) -> RunningServer:
        """A bound, not yet started, server; `one_command` leaves out the background work of a service's own
        process (a server for one CLI command, see `secondbrain.service.access`)."""
        ...

    async def main(self, config: Config, port: int | None = None) -> None:
        """Serve until SIGTERM or Ctrl-C (`secondbrain serve <name>`)."""
        ...


@dataclass(frozen=True)
class Service:
    name: str
    # The proto service's full name, as a health check asks for it.
    grpc_name: str
    # The services this one calls: run in a CLI process, it uses the running ones, and starts the others beside it.
    calls: tuple[str, ...] = ()
    # Its health says SERVING only once its embedding model has loaded (the first time, after making the model's
    # ONNX export): whoever waits for it to be ready allows for that.
    loads_model: bool = False

    def server(self) -> ServerModule:
        """The service's server module, imported now: a command loads only the services it uses."""
        return importlib.import_module(f"secondbrain.{self.name}.server")  # type: ignore[return-value]


SERVICES: dict[str, Service] = {
    service.name: service
    for service in (
        Service("ingest", ingest_service_pb2.DESCRIPTOR.services_by_name["IngestService"].full_name),
        Service(
            "retrieve", retrieve_service_pb2.DESCRIPTOR.services_by_name["RetrieveService"].full_name, loads_model=True
        ),
        Service("chat", chat_service_pb2.DESCRIPTOR.services_by_name["ChatService"].full_name, calls=("retrieve",)),
    )
}
