"""The note tools: read-only tools over the notes, written once for assistants (the MCP server) and for a model
that looks things up itself. Each is a name, a description written for a model, a JSON schema of its arguments
and a handler that calls our gRPC services (`registry`); what a handler finds is said as text for a model
(`formatting`).
"""

from secondbrain.note_tools.registry import (
    AGENT_TOOLS,
    NOTE_TOOLS,
    Found,
    NoteServices,
    NoteTool,
    ToolFailure,
    ToolResult,
    call_tool,
    find,
)

__all__ = [
    "AGENT_TOOLS",
    "NOTE_TOOLS",
    "Found",
    "NoteServices",
    "NoteTool",
    "ToolFailure",
    "ToolResult",
    "call_tool",
    "find",
]
