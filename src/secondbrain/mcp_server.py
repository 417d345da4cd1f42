"""The note tools as an MCP server (Model Context Protocol), for the assistants people already use: Claude Desktop,
Claude Code, Cursor. `secondbrain mcp` serves it over stdio, which is how those start a server.

Built on the official SDK's low-level server, so each tool keeps its own description and JSON schema and a failure
comes back as a tool error in our API's words (the SDK's high-level server would prefix them and show pydantic's
validation text). Notes are resources too: `note://<path>`, the path percent-encoded (notes' names have spaces).
"""

from __future__ import annotations

from urllib.parse import quote, unquote

import grpc
import mcp.types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from secondbrain import __version__
from secondbrain.note_tools import NOTE_TOOLS, NoteServices, call_tool
from secondbrain.retrieve.v1 import retrieve_service_pb2 as pb

NOTE_SCHEME = "note://"
# Notes listed as resources; a bigger vault is still readable through the template.
MAX_LISTED_RESOURCES = 1_000
INSTRUCTIONS = (
    "secondbrain answers from the user's own markdown notes. Use search_notes or retrieve_passages to find what the "
    "notes say, read_note to read more around a passage, note_links to follow [[links]], related_notes for what else "
    "is about a note's subject; cite note paths and lines."
)


def note_uri(path: str) -> str:
    return NOTE_SCHEME + quote(path, safe="/")


def note_path(uri: str) -> str:
    if not uri.startswith(NOTE_SCHEME):
        raise MCPError(code=types.INVALID_PARAMS, message=f"{uri} is not a note: note URIs start with {NOTE_SCHEME}")
    return unquote(uri.removeprefix(NOTE_SCHEME))


def build_server(services: NoteServices) -> Server:
    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.input_schema,
                    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
                )
                for tool in NOTE_TOOLS.values()
            ]
        )

    async def run_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await call_tool(services, params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(text=result.text)], is_error=result.is_error)

    async def list_resources(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        listed = await services.retrieve.ListNotes(pb.ListNotesRequest(limit=MAX_LISTED_RESOURCES), timeout=30)
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=note_uri(note.path), name=note.path, title=note.title, mime_type="text/markdown")
                for note in listed.notes
            ]
        )

    async def list_templates(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=NOTE_SCHEME + "{+path}",
            name="note",
            description="A note of the vault by its vault-relative path, e.g. note://Projects/Kitchen%20Renovation.md",
            mime_type="text/markdown",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(
        ctx: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        path = note_path(params.uri)
        try:
            note = await services.retrieve.GetNote(pb.GetNoteRequest(path=path), timeout=30)
        except grpc.aio.AioRpcError as error:
            raise MCPError(code=types.INVALID_PARAMS, message=error.details() or error.code().name) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, text=note.text, mime_type="text/markdown")]
        )

    return Server(
        "secondbrain",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=run_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


async def serve_stdio(services: NoteServices) -> None:
    """Serve MCP on this process's stdin and stdout until the client closes them."""
    server = build_server(services)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
