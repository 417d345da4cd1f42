"""The ingest service's server: `create_server` for tests (port 0), `main` for `secondbrain serve ingest`."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from secondbrain.config import Config
from secondbrain.db import Database
from secondbrain.embedding import create_embedder
from secondbrain.ingest.enrich import Contextualizer
from secondbrain.ingest.pipeline import Ingestor
from secondbrain.ingest.servicer import SERVICE_NAME, IngestServicer
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from secondbrain.llm import EXTRACTIVE, ProviderCatalog
from secondbrain.service.runner import ServiceDeps, serve
from secondbrain.service.server import RunningServer, ServiceBinding, build_server

log = logging.getLogger(__name__)


def build_ingestor(config: Config, db: Database, env: Mapping[str, str] | None = None) -> Ingestor:
    """The pipeline as configured: the embedder of `embedding.provider`, and enrichment when it is switched on."""
    env = os.environ if env is None else env
    section = config.vault.embedding
    contextualizer = None
    if section.contextualize:
        catalog = ProviderCatalog.from_config(config, env)
        provider = section.context_provider or catalog.default().provider
        if provider == EXTRACTIVE:
            log.warning("embedding.contextualize is on but no LLM provider is available; chunks get no context")
        else:
            catalog.check(provider, section.context_model or catalog.presets.providers[provider].default_model)
            model = section.context_model or catalog.presets.providers[provider].default_model
            contextualizer = Contextualizer(catalog.provider(provider), model)
    return Ingestor(db, create_embedder(section, env), config.vault.ingest, section, contextualizer)


async def create_server(address: str, deps: ServiceDeps, ingestor: Ingestor | None = None) -> RunningServer:
    servicer = IngestServicer(deps.config, ingestor or build_ingestor(deps.config, deps.db))
    return await build_server(
        address,
        [ServiceBinding(SERVICE_NAME, servicer, pb_grpc.add_IngestServiceServicer_to_server)],
        api_token=deps.config.settings.token,
    )


async def main(config: Config, port: int | None = None) -> None:
    await serve("ingest", config, create_server, port)
