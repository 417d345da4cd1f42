"""Doors for the assistants people already use: `mcp`, the note tools as an MCP server over stdio."""

from __future__ import annotations

import contextlib

from secondbrain.cli.app import config_with, run
from secondbrain.config import Config


def mcp() -> None:
    """Serve your notes to an assistant over MCP on stdin/stdout (Claude Desktop, Claude Code and Cursor start it).

    Tools: search_notes, retrieve_passages, read_note, list_notes, note_links and ask; every note is also a
    resource, `note://<path>`. It uses the running services when they answer (`secondbrain up`), else serves them in
    this process over the same database. Nothing but the protocol is written to stdout; messages go to stderr.
    """
    run(_serve(config_with()))


async def _serve(config: Config) -> None:
    from rich.console import Console

    from secondbrain.chat.v1 import chat_service_pb2_grpc as chat_grpc
    from secondbrain.mcp_server import serve_stdio
    from secondbrain.note_tools import NoteServices
    from secondbrain.retrieve.v1 import retrieve_service_pb2_grpc as pb_grpc
    from secondbrain.service.access import connect

    stderr = Console(stderr=True)
    async with contextlib.AsyncExitStack() as stack:
        retrieve = await stack.enter_async_context(
            connect(config, "retrieve", None, pb_grpc.RetrieveServiceStub, stderr, doing="serving the note tools")
        )
        chat = await stack.enter_async_context(
            connect(config, "chat", None, chat_grpc.ChatServiceStub, stderr, doing="answering")
        )
        await serve_stdio(NoteServices(retrieve, chat))
