"""The OpenAPI 3.1 document of the REST shim, generated from the endpoint table and the protos' descriptors."""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import Descriptor

from secondbrain import __version__
from secondbrain.gateway.endpoints import ENDPOINTS, OPENAI_PREFIX, Endpoint
from secondbrain.gateway.http_errors import ERROR_SCHEMA
from secondbrain.gateway.openai_openapi import OPENAPI_SCHEMAS, openapi_paths
from secondbrain.gateway.proto_json import (
    message_schema,
    query_fields,
    query_schema,
    reachable_messages,
    schema_name,
)

STREAM_ERROR_SCHEMA = "StreamError"


def _ref(descriptor: Descriptor | str) -> dict[str, str]:
    name = descriptor if isinstance(descriptor, str) else schema_name(descriptor)
    return {"$ref": f"#/components/schemas/{name}"}


def _event_payloads(response: Descriptor) -> dict[str, Descriptor]:
    """A streamed response's events: the fields of its `event` oneof, by name."""
    oneof = response.oneofs_by_name["event"]
    return {field.name: field.message_type for field in oneof.fields}


def _stream_description(endpoint: Endpoint) -> str:
    events = _event_payloads(endpoint.response)
    lines = [
        "Server-sent events, one per message of the gRPC stream, in its order. Each event's `data` is the JSON of "
        "the payload named below.",
        "",
    ]
    lines += [f"- `{name}`: `{schema_name(payload)}`" for name, payload in events.items()]
    if "error" not in events:
        lines.append(f"- `error`: `{STREAM_ERROR_SCHEMA}` (the stream failed after it started)")
    lines.append("")
    lines.append("A request refused before the stream starts gets an HTTP error with a JSON body instead.")
    return "\n".join(lines)


def _event_schema(endpoint: Endpoint) -> dict[str, Any]:
    """One event of the stream (what OpenAPI 3.2 calls the item schema of a sequential media type): its name, and
    its data as JSON of the payload that name stands for (listed in the description)."""
    names = [*_event_payloads(endpoint.response)]
    if "error" not in names:
        names.append("error")
    return {
        "type": "object",
        "properties": {
            "event": {"enum": names},
            "data": {"type": "string", "contentMediaType": "application/json"},
            "id": {"type": "string"},
            "retry": {"type": "integer"},
        },
        "required": ["event", "data"],
    }


def _operation(endpoint: Endpoint) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
        for name in endpoint.path_parameters
    ]
    operation: dict[str, Any] = {
        "operationId": endpoint.operation_id,
        "summary": endpoint.summary,
        "tags": [endpoint.tag],
        "description": f"Calls `{endpoint.grpc_path}`.",
    }
    taken = set(endpoint.path_parameters)
    if endpoint.has_body:
        operation["requestBody"] = {
            "required": True,
            "description": "The request message as proto3 JSON; path parameters fill their fields.",
            "content": {"application/json": {"schema": _ref(endpoint.request)}},
        }
    else:
        for name, field in query_fields(endpoint.request):
            if field.name in taken:
                continue
            parameter: dict[str, Any] = {"name": name, "in": "query", "required": False, "schema": query_schema(field)}
            if field.is_repeated:
                parameter.update(style="form", explode=True)
            parameters.append(parameter)
    if parameters:
        operation["parameters"] = parameters
    if endpoint.streams:
        success = {
            "description": _stream_description(endpoint),
            "content": {"text/event-stream": {"schema": _event_schema(endpoint)}},
        }
    else:
        success = {
            "description": "The response message as proto3 JSON.",
            "content": {"application/json": {"schema": _ref(endpoint.response)}},
        }
    operation["responses"] = {
        "200": success,
        "default": {
            "description": "An error: the gRPC status as an HTTP status, with a message saying what to do.",
            "content": {"application/json": {"schema": _ref("Error")}},
        },
    }
    return operation


def openapi_document() -> dict[str, Any]:
    """The whole document. Every endpoint, every message it can carry, the error body and the bearer token."""
    paths: dict[str, dict[str, Any]] = {}
    roots: list[Descriptor] = []
    for endpoint in ENDPOINTS:
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = _operation(endpoint)
        roots += [endpoint.request, endpoint.response]
        if endpoint.streams:
            roots += list(_event_payloads(endpoint.response).values())
    schemas: dict[str, Any] = {name: message_schema(d) for name, d in sorted(reachable_messages(roots).items())}
    schemas["Error"] = ERROR_SCHEMA
    # The OpenAI-compatible chat API beside the REST one, in OpenAI's shapes.
    paths.update(openapi_paths(OPENAI_PREFIX))
    schemas.update(OPENAPI_SCHEMAS)
    schemas[STREAM_ERROR_SCHEMA] = {
        "type": "object",
        "properties": ERROR_SCHEMA["properties"]["error"]["properties"],
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "secondbrain REST API",
            "version": __version__,
            "description": (
                "The REST + server-sent events face of secondbrain's gRPC services. Each endpoint calls one RPC; "
                "bodies are the messages' proto3 JSON. When the server has an API token (SECONDBRAIN_API_TOKEN), "
                "every endpoint below needs `Authorization: Bearer <token>`; this document itself does not."
            ),
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        # The token is required only when one is configured; {} lists the no-token case.
        "security": [{"bearer": []}, {}],
    }
