"""One wire server as a process of its own, for tests that kill it: `python -m tests.wire openai --port N`.

Every request gets the same reply (`--deltas` words, `--delay` seconds before each), since a script cannot be pushed
across processes. It prints `ready <base url>` once it listens and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio

from .anthropic_server import AnthropicServer
from .openai_server import OpenAIServer
from .script import Reply

SERVERS = {"openai": OpenAIServer, "anthropic": AnthropicServer}


async def serve(kind: str, port: int, reply: Reply) -> None:
    server = SERVERS[kind]()
    server.script.default = reply
    await server.start(port)
    print(f"ready {server.base_url}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("kind", choices=sorted(SERVERS))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--deltas", type=int, default=8, help="words in every streamed answer")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each word")
    options = parser.parse_args()
    words = [f"word{i} " for i in range(options.deltas)]
    asyncio.run(serve(options.kind, options.port, Reply(deltas=words, delay=options.delay)))


if __name__ == "__main__":
    main()
