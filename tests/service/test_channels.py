"""Channels to our services spread calls over every address of the target (round robin), not only the first, and
take responses as large as our servers send."""

from __future__ import annotations

import grpc

from secondbrain.service.auth import open_channel
from secondbrain.service.limits import MAX_RESPONSE_BYTES


class _Count(grpc.GenericRpcHandler):
    def __init__(self) -> None:
        self.calls = 0

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        async def echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            self.calls += 1
            return request

        return grpc.unary_unary_rpc_method_handler(echo)


async def test_calls_are_balanced_over_every_address_of_the_target() -> None:
    servers, counters, ports = [], [], []
    for _ in range(2):
        counter = _Count()
        server = grpc.aio.server(handlers=[counter])
        ports.append(server.add_insecure_port("127.0.0.1:0"))
        await server.start()
        servers.append(server)
        counters.append(counter)
    try:
        target = "ipv4:" + ",".join(f"127.0.0.1:{port}" for port in ports)
        async with open_channel(target, None) as channel:
            echo = channel.unary_unary("/test.Echo/Echo")
            for _ in range(10):
                assert await echo(b"hi", timeout=5) == b"hi"
        # pick_first (the default) would send all ten to the first address.
        assert all(counter.calls >= 3 for counter in counters), [counter.calls for counter in counters]
    finally:
        for server in servers:
            await server.stop(0)


async def test_a_response_as_large_as_our_servers_send_is_received() -> None:
    """gRPC's clients refuse over 4 MiB by default; a 10 MiB note read through the shim or the CLI was refused."""
    large = b"x" * (MAX_RESPONSE_BYTES - 1024)
    server = grpc.aio.server(handlers=[_Large(large)], options=[("grpc.max_send_message_length", MAX_RESPONSE_BYTES)])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with open_channel(f"127.0.0.1:{port}", None) as channel:
            assert len(await channel.unary_unary("/test.Large/Get")(b"", timeout=10)) == len(large)
    finally:
        await server.stop(0)


class _Large(grpc.GenericRpcHandler):
    def __init__(self, body: bytes) -> None:
        self.body = body

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        async def get(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            return self.body

        return grpc.unary_unary_rpc_method_handler(get)
