"""The REST API: each endpoint is one RPC of one service, and nothing more.

An endpoint's request message is filled from its path parameters (named after the request's fields), then its
JSON body (POST, PUT, PATCH) or its query string (GET, DELETE). A unary RPC answers with its response message as
JSON; a server-streaming RPC answers as server-sent events, one per message, named after the `event` oneof field
that is set (`sources`, `delta`, `done`, `error` for a chat turn).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from google.protobuf.descriptor import Descriptor, MethodDescriptor

from secondbrain.chat.v1 import chat_service_pb2
from secondbrain.ingest.v1 import ingest_service_pb2
from secondbrain.retrieve.v1 import retrieve_service_pb2

SERVICES = {
    "ingest": ingest_service_pb2.DESCRIPTOR.services_by_name["IngestService"],
    "retrieve": retrieve_service_pb2.DESCRIPTOR.services_by_name["RetrieveService"],
    "chat": chat_service_pb2.DESCRIPTOR.services_by_name["ChatService"],
}

_PATH_PARAMETER = re.compile(r"\{(\w+)\}")

# Beside the REST API, behind the same token: the note tools over MCP's streamable HTTP (gateway/mcp_door.py).
MCP_PATH = "/mcp"
# And the OpenAI-compatible chat API (gateway/openai_compat.py).
OPENAI_PREFIX = "/v1/"


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    service: str
    rpc: str
    summary: str
    tag: str

    @cached_property
    def descriptor(self) -> MethodDescriptor:
        return SERVICES[self.service].methods_by_name[self.rpc]

    @property
    def request(self) -> Descriptor:
        return self.descriptor.input_type

    @property
    def response(self) -> Descriptor:
        return self.descriptor.output_type

    @property
    def streams(self) -> bool:
        return self.descriptor.server_streaming

    @property
    def has_body(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH")

    @property
    def path_parameters(self) -> list[str]:
        return _PATH_PARAMETER.findall(self.path)

    @property
    def grpc_path(self) -> str:
        """The gRPC method path, such as `/secondbrain.chat.v1.ChatService/SendMessage`."""
        return f"/{SERVICES[self.service].full_name}/{self.rpc}"

    @property
    def operation_id(self) -> str:
        return self.rpc[0].lower() + self.rpc[1:]


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/api/chat/options", "chat", "GetOptions", "Providers, their models, personas, defaults", "chat"),
    Endpoint("GET", "/api/chat/settings", "chat", "GetSettings", "The chat settings", "chat"),
    Endpoint("PUT", "/api/chat/settings", "chat", "UpdateSettings", "Change the chat settings", "chat"),
    Endpoint("GET", "/api/chat/conversations", "chat", "ListConversations", "Conversations, newest first", "chat"),
    Endpoint("POST", "/api/chat/conversations", "chat", "CreateConversation", "Start a conversation", "chat"),
    Endpoint("GET", "/api/chat/conversations/{id}", "chat", "GetConversation", "One conversation", "chat"),
    Endpoint("PATCH", "/api/chat/conversations/{id}", "chat", "UpdateConversation", "Rename or re-persona", "chat"),
    Endpoint("DELETE", "/api/chat/conversations/{id}", "chat", "DeleteConversation", "Delete a conversation", "chat"),
    Endpoint(
        "POST",
        "/api/chat/conversations/{conversation_id}/messages",
        "chat",
        "SendMessage",
        "Ask; the answer streams as events: sources, then delta..., then done (or error)",
        "chat",
    ),
    Endpoint(
        "GET",
        "/api/search",
        "retrieve",
        "Search",
        # The arms' names in our code (lexical, vector, hybrid), beside the proto's enum values (kept for clients).
        "Find notes: lexical (SEARCH_MODE_KEYWORD), vector (SEARCH_MODE_SEMANTIC) or hybrid, both fused (the default)",
        "retrieve",
    ),
    Endpoint(
        "POST",
        "/api/retrieve",
        "retrieve",
        "Retrieve",
        "The numbered passages for a question, as events: plan, then passage..., then done",
        "retrieve",
    ),
    # The reader's reads. A note's path holds '/', so it is a query parameter (`?path=Projects/Kitchen.md`), not a
    # path segment.
    Endpoint("GET", "/api/notes", "retrieve", "ListNotes", "Notes by path or newest first, within filters", "retrieve"),
    Endpoint(
        "GET",
        "/api/notes/read",
        "retrieve",
        "GetNote",
        "A note's text, or some of its lines, with its properties",
        "retrieve",
    ),
    Endpoint("GET", "/api/notes/links", "retrieve", "GetNoteLinks", "A note's wikilinks and backlinks", "retrieve"),
    Endpoint(
        "GET",
        "/api/notes/related",
        "retrieve",
        "GetRelatedNotes",
        "The notes related to one: by meaning, links and tags, each with why",
        "retrieve",
    ),
    Endpoint(
        "GET",
        "/api/facets",
        "retrieve",
        "GetFacets",
        "The folders, tags and days to browse by, with counts",
        "retrieve",
    ),
    Endpoint(
        "GET",
        "/api/questions",
        "retrieve",
        "SuggestQuestions",
        "Questions to ask, drawn from the vault's notes",
        "retrieve",
    ),
    Endpoint("GET", "/api/index/status", "ingest", "GetIndexStatus", "What the index holds", "ingest"),
)
