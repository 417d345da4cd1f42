"""Text no service can store: a NUL character in any string field of a request.

PostgreSQL's text type cannot hold U+0000, so such a value would fail deep inside a handler as an internal error;
checked once here for every RPC, it is refused up front, naming the field.
"""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message


def nul_field(message: Message, prefix: str = "") -> str | None:
    """The dotted name of the first string field (at any depth) that contains a NUL character, else None."""
    for field, value in message.ListFields():
        name = f"{prefix}{field.name}"
        values = value if field.is_repeated else [value]
        if field.type == FieldDescriptor.TYPE_STRING:
            if any("\x00" in text for text in values):
                return name
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.message_type.GetOptions().map_entry:
                entries = value.items() if hasattr(value, "items") else []
                if any("\x00" in str(k) or (isinstance(v, str) and "\x00" in v) for k, v in entries):
                    return name
                continue
            for item in values:
                if (found := nul_field(item, f"{name}.")) is not None:
                    return found
    return None
