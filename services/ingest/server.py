"""The ingest service's server: `create_server` for tests (port 0), `main` for `secondbrain serve ingest`."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from secondbrain.config import Config
from secondbrain.db import Database
from secondbrain.embedding import create_embedder
from secondbrain.errors import FailedPrecondition, SecondbrainError
from secondbrain.ingest.enrich import Contextualizer
from secondbrain.ingest.events import SyncFinished
from secondbrain.ingest.pipeline import Ingestor
from secondbrain.ingest.queue_worker import run_queue_worker
from secondbrain.ingest.servicer import SERVICE_NAME, IngestServicer
from secondbrain.ingest.v1 import ingest_service_pb2_grpc as pb_grpc
from secondbrain.llm import EXTRACTIVE, ProviderCatalog
from secondbrain.service.client_address import networks
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
    embedder = create_embedder(section, env, models_dir=config.settings.models_dir)
    return Ingestor(db, embedder, config.vault.ingest, contextualizer)


async def create_server(
    address: str, deps: ServiceDeps, ingestor: Ingestor | None = None, *, one_command: bool = False
) -> RunningServer:
    """An ingest server on `address`. The service's own process also helps with every sync's queue and, when
    configured, syncs the vault periodically; a server for `one_command` does neither (its sync works its own queue,
    and a claim it left behind on exit would wait out its lease)."""
    ingestor = ingestor or build_ingestor(deps.config, deps.db)
    servicer = IngestServicer(deps.config, ingestor)
    running = await build_server(
        address,
        [ServiceBinding(SERVICE_NAME, servicer, pb_grpc.add_IngestServiceServicer_to_server)],
        api_token=deps.config.settings.token,
        proxies=networks(deps.config.settings.trusted_proxies),
        trusted_hops=deps.config.settings.trusted_proxy_hops,
    )
    if one_command:
        return running
    running.background.append(asyncio.create_task(_close_interrupted_runs(ingestor)))
    # Every ingest process helps with every sync's queue, whoever started the sync.
    running.background.append(asyncio.create_task(run_queue_worker(ingestor)))
    settings = deps.config.settings
    if settings.sync_interval_seconds > 0 and settings.vault is not None:
        running.background.append(
            asyncio.create_task(_sync_periodically(ingestor, settings.vault, settings.sync_interval_seconds))
        )
    return running


async def _close_interrupted_runs(ingestor: Ingestor) -> None:
    """Once, as the process starts: syncs a dead ingest process left 'running' are marked interrupted (a new sync
    does it too, so a database that is not up yet only delays it)."""
    try:
        await ingestor.close_interrupted_runs()
    except Exception as error:
        log.warning("could not mark interrupted syncs", extra={"error": str(error)})


async def _sync_periodically(ingestor: Ingestor, vault: Path, interval: float) -> None:
    """Keep the index in step with a vault no one syncs by hand (a volume in Kubernetes, kept current by git-sync).
    Several replicas may run this: the sync lock lets one at a time through, and the others skip that round."""
    while True:
        try:
            async for event in ingestor.sync(vault):
                if isinstance(event, SyncFinished):
                    totals = event.totals
                    log.info(
                        "periodic sync finished",
                        extra={"added": totals.added, "updated": totals.updated, "deleted": totals.deleted,
                               "failed": totals.failed, "milliseconds": round(event.milliseconds)},
                    )  # fmt: skip
        except FailedPrecondition as error:
            log.info("periodic sync skipped", extra={"reason": str(error)})
        except SecondbrainError as error:
            log.warning("periodic sync failed", extra={"error": str(error)})
        except Exception:
            log.exception("periodic sync failed")
        await asyncio.sleep(interval)


async def main(config: Config, port: int | None = None) -> None:
    await serve("ingest", config, create_server, port)
