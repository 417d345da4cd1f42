"""The services behind the shim: their addresses, and one channel to each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import grpc

from secondbrain.service.auth import open_channel


@dataclass
class Backends:
    """The services' addresses, and one channel to each, opened on first use in the serving event loop."""

    addresses: Mapping[str, str]
    token: str | None
    _channels: dict[str, grpc.aio.Channel] = field(default_factory=dict)

    def channel(self, service: str) -> grpc.aio.Channel:
        if service not in self._channels:
            self._channels[service] = open_channel(self.addresses[service], self.token)
        return self._channels[service]

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close()
