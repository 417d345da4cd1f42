"""The chat service's server: `create_server` for tests (port 0), `main` for `secondbrain serve chat`."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping

from secondbrain.chat import store
from secondbrain.chat.agent import AgentLimits
from secondbrain.chat.app import Chat
from secondbrain.chat.conversations import Conversations
from secondbrain.chat.deletion_watch import ANSWER_LEASE_SECONDS
from secondbrain.chat.rate_limit import RateLimiter
from secondbrain.chat.retrieve_client import DEFAULT_TIMEOUT_SECONDS, RetrieveClient
from secondbrain.chat.servicer import SERVICE_NAME, ChatServicer
from secondbrain.chat.settings import ChatSettings
from secondbrain.chat.turn import ABANDONED_ERROR, Turns
from secondbrain.chat.v1 import chat_service_pb2_grpc as pb_grpc
from secondbrain.config import Config
from secondbrain.db import Database
from secondbrain.llm import ProviderCatalog
from secondbrain.providers import RetryPolicy
from secondbrain.service.client_address import networks
from secondbrain.service.runner import ServiceDeps, serve
from secondbrain.service.server import RunningServer, ServiceBinding, build_server

log = logging.getLogger(__name__)

# How often each chat process looks for answers whose lease ran out (an indexed lookup of the pending ones): a turn
# killed mid-answer is closed within the lease and one sweep of its end.
SWEEP_INTERVAL_SECONDS = ANSWER_LEASE_SECONDS / 4


def build_chat(
    config: Config,
    db: Database,
    env: Mapping[str, str] | None = None,
    *,
    retrieve_address: str | None = None,
    retrieve_timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    retry: RetryPolicy | None = None,
) -> Chat:
    """The chat as configured: the providers whose keys are in `env`, and the retrieve service at
    `retrieve_address`, else SECONDBRAIN_RETRIEVE_ADDRESS (a Kubernetes service name, say), else
    SECONDBRAIN_HOST:SECONDBRAIN_RETRIEVE_PORT."""
    env = os.environ if env is None else env
    settings = config.settings
    catalog = ProviderCatalog.from_config(config, env, retry=retry)
    chat_settings = ChatSettings(db, catalog, config.vault.chat, config.vault.retrieve)
    retrieve = RetrieveClient(
        retrieve_address or settings.address_of("retrieve"),
        timeout_seconds=retrieve_timeout_seconds,
        token=settings.token,
    )
    return Chat(
        settings=chat_settings,
        conversations=Conversations(db, chat_settings),
        turns=Turns(db, chat_settings, catalog, retrieve, AgentLimits.from_config(config.vault.chat.agent)),
        retrieve=retrieve,
    )


async def close_abandoned_turns(db: Database) -> int:
    """Close the answers a dead chat process left pending; returns how many."""
    async with db.pool.acquire() as connection:
        closed = await store.close_abandoned_turns(connection, ANSWER_LEASE_SECONDS, ABANDONED_ERROR)
    if closed:
        log.warning("closed answers left pending by a chat process that stopped", extra={"answers": closed})
    return closed


async def _sweep_abandoned_turns(db: Database) -> None:
    """Runs for the server's life, from its start: every few seconds, answers whose lease ran out are closed."""
    while True:
        try:
            await close_abandoned_turns(db)
        except Exception:
            log.exception("closing abandoned answers failed")
        await asyncio.sleep(SWEEP_INTERVAL_SECONDS)


async def _close_when_stopped(chat: Chat) -> None:
    """Runs for the server's life; cancelled when it stops, it closes the chat's channel to retrieve."""
    try:
        await asyncio.Event().wait()
    finally:
        try:
            await chat.close()
        except Exception:  # the server stops regardless; what failed is logged, not lost
            log.exception("closing the chat's channel to the retrieve service failed")


async def create_server(
    address: str, deps: ServiceDeps, chat: Chat | None = None, *, one_command: bool = False
) -> RunningServer:
    """A chat server on `address`; `chat` defaults to `build_chat(deps.config, deps.db)` and is closed with the
    server only when it was built here (a caller that passes one closes it). The service's own process also closes
    answers a dead chat process left pending; a server for `one_command` leaves that to the services."""
    owned = chat is None
    chat = chat or build_chat(deps.config, deps.db)
    settings = deps.config.settings
    limiter = RateLimiter(
        settings.chat_messages_per_minute, networks(settings.trusted_proxies), settings.trusted_proxy_hops
    )
    running = await build_server(
        address,
        [ServiceBinding(SERVICE_NAME, ChatServicer(chat, limiter), pb_grpc.add_ChatServiceServicer_to_server)],
        api_token=settings.token,
        proxies=networks(settings.trusted_proxies),
        trusted_hops=settings.trusted_proxy_hops,
    )
    if owned:
        running.background.append(asyncio.create_task(_close_when_stopped(chat)))
    if not one_command:
        running.background.append(asyncio.create_task(_sweep_abandoned_turns(deps.db)))
    return running


async def main(config: Config, port: int | None = None) -> None:
    # Its statements hold no session settings, locks or listeners.
    await serve("chat", config, create_server, port, session_state=False)
