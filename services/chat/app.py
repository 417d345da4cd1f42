"""The chat service's logic as one object: settings and options, conversations, turns, and the retrieve client.

`secondbrain.chat.server.build_chat` makes it from the configuration; tests make it with their own environment,
retry policy and retrieve address. The servicer only translates between it and the proto.
"""

from __future__ import annotations

from dataclasses import dataclass

from secondbrain.chat.conversations import Conversations
from secondbrain.chat.retrieve_client import RetrieveClient
from secondbrain.chat.settings import ChatSettings
from secondbrain.chat.turn import Turns


@dataclass(frozen=True)
class Chat:
    settings: ChatSettings
    conversations: Conversations
    turns: Turns
    retrieve: RetrieveClient

    async def close(self) -> None:
        """Close the channel to the retrieve service."""
        await self.retrieve.close()
