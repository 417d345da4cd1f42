"""The OpenAI-compatible chat API's two operations (`/v1/models`, `/v1/chat/completions`, served by
gateway/openai_compat.py) in the shim's OpenAPI document, in OpenAI's own shapes; gateway/openapi.py adds them."""

from __future__ import annotations

from typing import Any

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}
_SOURCES = {
    "type": "object",
    "description": "secondbrain's own field: the passages the answer cites.",
    "properties": {
        "sources": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "number": {"type": "integer"},
                    "path": {"type": "string"},
                    "title": {"type": "string"},
                    "heading_path": {"type": "array", "items": {"type": "string"}},
                    "start_line": {"type": "integer"},
                    "end_line": {"type": "integer"},
                },
            },
        }
    },
}
OPENAPI_SCHEMAS: dict[str, Any] = {
    "OpenAIError": _ERROR,
    "ChatCompletionRequest": {
        "type": "object",
        "required": ["messages"],
        "properties": {
            "model": {"type": "string", "description": "`secondbrain` (the default) or an id of /v1/models."},
            "messages": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["role"],
                    "properties": {
                        "role": {"enum": ["system", "developer", "user", "assistant"]},
                        "content": {
                            "anyOf": [
                                {"type": "string"},
                                {"type": "null"},
                                {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "required": ["type"],
                                        "properties": {"type": {"type": "string"}, "text": {"type": "string"}},
                                    },
                                },
                            ]
                        },
                    },
                },
            },
            "stream": {"type": "boolean", "default": False},
        },
    },
    "ChatCompletion": {
        "type": "object",
        "required": ["id", "object", "created", "model", "choices"],
        "properties": {
            "id": {"type": "string"},
            "object": {"const": "chat.completion"},
            "created": {"type": "integer"},
            "model": {"type": "string"},
            "choices": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "index": {"type": "integer"},
                        "message": {
                            "type": "object",
                            "properties": {"role": {"const": "assistant"}, "content": {"type": "string"}},
                        },
                        "finish_reason": {"type": "string"},
                    },
                },
            },
            "usage": {
                "type": "object",
                "properties": {
                    "prompt_tokens": {"type": "integer"},
                    "completion_tokens": {"type": "integer"},
                    "total_tokens": {"type": "integer"},
                },
            },
            "secondbrain": _SOURCES,
        },
    },
    "ModelList": {
        "type": "object",
        "required": ["object", "data"],
        "properties": {
            "object": {"const": "list"},
            "data": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["id", "object"],
                    "properties": {
                        "id": {"type": "string"},
                        "object": {"const": "model"},
                        "created": {"type": "integer"},
                        "owned_by": {"type": "string"},
                    },
                },
            },
        },
    },
}


def _errors() -> dict[str, Any]:
    return {
        "default": {
            "description": "An error in OpenAI's shape, with secondbrain's message.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OpenAIError"}}},
        }
    }


def openapi_paths(prefix: str) -> dict[str, Any]:
    return {
        f"{prefix}models": {
            "get": {
                "operationId": "openai_list_models",
                "summary": "Lists `secondbrain` (the configured default) and every available provider's models.",
                "tags": ["openai-compatible"],
                "responses": {
                    "200": {
                        "description": "The models, in OpenAI's shape.",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ModelList"}}},
                    },
                    **_errors(),
                },
            }
        },
        f"{prefix}chat/completions": {
            "post": {
                "operationId": "openai_chat_completions",
                "summary": "Answers the last user message from the notes, the earlier messages as its history.",
                "description": (
                    "OpenAI's chat completions API. Nothing is stored unless the `X-Secondbrain-Conversation` header "
                    "names a conversation. With `stream: true` the answer comes as `text/event-stream` chunks "
                    "(`chat.completion.chunk`, ending `data: [DONE]`)."
                ),
                "tags": ["openai-compatible"],
                "parameters": [
                    {
                        "name": "X-Secondbrain-Conversation",
                        "in": "header",
                        "required": False,
                        "description": "A conversation to send the question to, which stores the turn.",
                        "schema": {"type": "string"},
                    },
                    {
                        "name": "X-Secondbrain-Now",
                        "in": "header",
                        "required": False,
                        "description": (
                            "The asker's moment, ISO 8601 with its UTC offset (2026-11-30T18:00:00+00:00), that a "
                            "time in the question ('last week') is read against; without it, the server's clock."
                        ),
                        "schema": {"type": "string", "maxLength": 40},
                    },
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChatCompletionRequest"}}},
                },
                "responses": {
                    "200": {
                        "description": "The answer, whole (JSON) or streamed (server-sent events).",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/ChatCompletion"}},
                            # One server-sent event (the item schema of a sequential media type): its data is a
                            # `chat.completion.chunk` as JSON, or `[DONE]`; OpenAI names no event, so a client
                            # reads each as "message".
                            "text/event-stream": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "event": {"type": "string"},
                                        "data": {"type": "string"},
                                        "id": {"type": "string"},
                                        "retry": {"type": "integer"},
                                    },
                                    "required": ["data"],
                                }
                            },
                        },
                    },
                    **_errors(),
                },
            }
        },
    }
