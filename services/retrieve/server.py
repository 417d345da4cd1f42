"""The retrieve service's server: `create_server` for tests (port 0), `main` for `secondbrain serve retrieve`."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from functools import cache, lru_cache

from secondbrain.config import Config
from secondbrain.db import Database
from secondbrain.embedding import Embedder, create_embedder
from secondbrain.errors import SecondbrainError
from secondbrain.retrieve.condense import Condenser, create_condenser
from secondbrain.retrieve.pipeline import Retriever
from secondbrain.retrieve.rerank import Reranker, create_reranker
from secondbrain.retrieve.servicer import SERVICE_NAME, RetrieveServicer
from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
from secondbrain.service.client_address import networks
from secondbrain.service.runner import ServiceDeps, serve
from secondbrain.service.server import RunningServer, ServiceBinding, build_server

log = logging.getLogger(__name__)


def build_retriever(config: Config, db: Database, env: Mapping[str, str] | None = None) -> Retriever:
    """The pipeline as configured. A missing embedder or reranker key does not stop the service: retrieval runs
    lexically, or unreranked, and the plan says why."""
    env = os.environ if env is None else env
    embedder: Embedder | None = None
    reason = ""
    try:
        embedder = create_embedder(
            config.vault.embedding, env, models_dir=config.settings.models_dir, serves_queries=True
        )
    except SecondbrainError as error:
        reason = f"the embedder cannot start: {error}"
        log.warning("no vector arm", extra={"reason": reason})
    section = config.vault.retrieve.reranker

    @cache
    def reranker(model: str | None) -> Reranker:
        return create_reranker(section, env, model=model)

    # One per answering provider and model a turn names (a known pair, so a handful), made on first use.
    @lru_cache(maxsize=64)
    def condenser(answer_provider: str, answer_model: str) -> Condenser:
        return create_condenser(config, env, answer_provider, answer_model)

    condenser("", "")  # the default's configuration errors stop the service at start, as before
    return Retriever(db, embedder, condenser, reranker, config.vault.retrieve, reason)


async def create_server(
    address: str, deps: ServiceDeps, retriever: Retriever | None = None, *, one_command: bool = False
) -> RunningServer:
    """A retrieve server on `address`. The service's own process loads its embedder at once; a server for
    `one_command` loads it on the first question that needs it (a lexical search never does)."""
    retriever = retriever or build_retriever(deps.config, deps.db)
    running = await build_server(
        address,
        [ServiceBinding(SERVICE_NAME, RetrieveServicer(retriever), pb_grpc.add_RetrieveServiceServicer_to_server)],
        api_token=deps.config.settings.token,
        proxies=networks(deps.config.settings.trusted_proxies),
        trusted_hops=deps.config.settings.trusted_proxy_hops,
    )
    if retriever.embedder is not None and not one_command:
        # Load the model now rather than on the first question (a fraction of a second for the local one, seconds
        # the first time, when its export is made); health says SERVING once it is loaded.
        running.warm_up(_warm_up(retriever.embedder), "embedder warm-up")
    return running


async def _warm_up(embedder: Embedder) -> None:
    try:
        await embedder.ensure_ready()
    except SecondbrainError as error:
        # Retrieval still serves, lexically; its plan says why the vector arm did not run.
        log.warning("embedder not ready", extra={"error": str(error)})


async def main(config: Config, port: int | None = None) -> None:
    # Its statements keep their settings in `SET LOCAL` (store/statement.py) and hold no locks or listeners.
    await serve("retrieve", config, create_server, port, session_state=False)
