"""Protobuf messages as JSON for the REST shim: the proto3 JSON mapping, its JSON Schema, and query strings.

The protos are the one definition of every message. The shim's bodies are their canonical proto3 JSON (field
names in lowerCamelCase, enums by name, 64-bit integers and timestamps as strings), and the OpenAPI schemas are
derived here from the same descriptors, so the document cannot drift from what the shim sends.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from secondbrain.errors import InvalidInput

# Well-known types have a JSON form of their own.
_WELL_KNOWN: dict[str, dict[str, Any]] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {"type": "string", "pattern": r"^-?\d+(\.\d+)?s$"},
    "google.protobuf.FieldMask": {
        "type": "string",
        "description": "Comma-separated field paths in lowerCamelCase, such as `title,personaId`.",
    },
    "google.protobuf.Empty": {"type": "object"},
}

_SCALARS: dict[int, dict[str, Any]] = {
    FieldDescriptor.TYPE_DOUBLE: {"type": "number", "format": "double"},
    FieldDescriptor.TYPE_FLOAT: {"type": "number", "format": "float"},
    FieldDescriptor.TYPE_INT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_SINT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_SFIXED32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_UINT32: {"type": "integer", "format": "int64", "minimum": 0},
    FieldDescriptor.TYPE_FIXED32: {"type": "integer", "format": "int64", "minimum": 0},
    # proto3 JSON writes 64-bit integers as strings (JavaScript numbers lose precision past 2^53).
    FieldDescriptor.TYPE_INT64: {"type": "string", "format": "int64"},
    FieldDescriptor.TYPE_SINT64: {"type": "string", "format": "int64"},
    FieldDescriptor.TYPE_SFIXED64: {"type": "string", "format": "int64"},
    FieldDescriptor.TYPE_UINT64: {"type": "string", "format": "uint64"},
    FieldDescriptor.TYPE_FIXED64: {"type": "string", "format": "uint64"},
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "format": "byte"},
}


def to_json(message: Message) -> dict[str, Any]:
    """`message` as canonical proto3 JSON, every field present (a client need not know proto defaults)."""
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def from_json(data: object, message: Message, what: str) -> Message:
    """Fill `message` from proto3 JSON `data` (lowerCamelCase or snake_case names); unknown fields and wrong
    types are InvalidInput naming them."""
    if not isinstance(data, dict):
        raise InvalidInput(f"{what} must be a JSON object")
    try:
        json_format.ParseDict(data, message)
    except json_format.ParseError as error:
        raise InvalidInput(f"{what}: {_problem(str(error))}") from None
    return message


# protobuf's own wording of a JSON parse failure, which names message types and Python internals: read for the field
# and the reason, and said in the API's terms (found by a user: an unknown REST field got the raw parser text).
_UNKNOWN_FIELD = re.compile(
    r'has no field named "(?P<name>[^"]+)" at "(?P<at>[^"]+)"\.\s*'
    r'Available Fields\(except extensions\): "\[(?P<known>.*)\]"',
    re.DOTALL,
)
_FIELD_STEP = re.compile(r"Failed to parse (?P<name>\w+) field: ")
_WRONG_TYPE = [
    (re.compile(r"invalid literal for int\(\) with base 10: (?P<got>.*?)\.*$"), "expected a whole number, got {got}"),
    (re.compile(r"Couldn't parse integer: (?P<got>.*?)\.*$"), "expected a whole number, got {got}"),
    (re.compile(r"expected string or bytes-like object, got '(?P<got>\w+)'"), "expected a string, not {got}"),
    (re.compile(r"Expected true or false without quotes.*"), "expected true or false"),
]


def _problem(text: str) -> str:
    """A JSON parse failure as the field it is about (dotted, from the body's top) and what was wrong with it."""
    path: list[str] = []
    while step := _FIELD_STEP.match(text):
        path.append(step["name"])
        text = text[step.end() :]
    if unknown := _UNKNOWN_FIELD.search(text):
        inner = unknown["at"].split(".")[1:]
        where = ".".join([*inner, unknown["name"]])
        known = ", ".join(name.strip().strip("'") for name in unknown["known"].split(",") if name.strip())
        return f"unknown field {where!r}; the fields there are: {known}"
    reason = text.strip().rstrip(".")
    for pattern, wording in _WRONG_TYPE:
        if found := pattern.search(reason):
            reason = wording.format(**found.groupdict())
            break
    return f"{'.'.join(path)}: {reason}" if path else reason


def schema_name(descriptor: Descriptor) -> str:
    return descriptor.full_name


def _field_schema(field: FieldDescriptor) -> dict[str, Any]:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        value = field.message_type.fields_by_name["value"]
        return {"type": "object", "additionalProperties": _single_schema(value)}
    single = _single_schema(field)
    if field.is_repeated:
        return {"type": "array", "items": single}
    return single


def _single_schema(field: FieldDescriptor) -> dict[str, Any]:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        known = _WELL_KNOWN.get(field.message_type.full_name)
        return dict(known) if known else {"$ref": f"#/components/schemas/{schema_name(field.message_type)}"}
    if field.type == FieldDescriptor.TYPE_ENUM:
        return {"type": "string", "enum": [value.name for value in field.enum_type.values]}
    return dict(_SCALARS[field.type])


def message_schema(descriptor: Descriptor) -> dict[str, Any]:
    """The JSON Schema of one message's proto3 JSON form (fields by their JSON names)."""
    properties = {field.json_name: _field_schema(field) for field in descriptor.fields}
    return {"type": "object", "properties": properties, "additionalProperties": False}


def reachable_messages(roots: list[Descriptor]) -> dict[str, Descriptor]:
    """Every message schema `roots` refer to, themselves included, by schema name."""
    found: dict[str, Descriptor] = {}
    pending = list(roots)
    while pending:
        descriptor = pending.pop()
        if descriptor.full_name in _WELL_KNOWN or schema_name(descriptor) in found:
            continue
        found[schema_name(descriptor)] = descriptor
        for field in descriptor.fields:
            if field.message_type is None:
                continue
            if field.message_type.GetOptions().map_entry:
                value = field.message_type.fields_by_name["value"]
                if value.message_type is not None:
                    pending.append(value.message_type)
            else:
                pending.append(field.message_type)
    return found


def query_fields(descriptor: Descriptor, prefix: str = "") -> Iterator[tuple[str, FieldDescriptor]]:
    """The fields a query string can set: scalars and repeated scalars, nested messages by dotted JSON names
    (`filters.folders`). Well-known types and maps are left to JSON bodies."""
    for field in descriptor.fields:
        name = f"{prefix}{field.json_name}"
        if field.type != FieldDescriptor.TYPE_MESSAGE:
            yield name, field
        elif (
            not field.is_repeated
            and field.message_type.full_name not in _WELL_KNOWN
            and not field.message_type.GetOptions().map_entry
        ):
            yield from query_fields(field.message_type, f"{name}.")


def query_schema(field: FieldDescriptor) -> dict[str, Any]:
    """A query parameter's schema: a repeated field is the parameter given more than once."""
    return _field_schema(field)


def from_query(params: Mapping[str, list[str]], descriptor: Descriptor) -> dict[str, Any]:
    """Query parameters (`name -> values`) as a proto3 JSON object for `descriptor`; InvalidInput names an
    unknown parameter or a scalar given twice."""
    known = dict(query_fields(descriptor))
    # snake_case names work too, as they do in JSON bodies.
    for name, field in list(known.items()):
        known.setdefault(_snake_path(name, descriptor), field)
    data: dict[str, Any] = {}
    for name, values in params.items():
        field = known.get(name)
        if field is None:
            raise InvalidInput(
                f"unknown query parameter {name!r}; known: {', '.join(sorted(dict(query_fields(descriptor))))}"
            )
        if not field.is_repeated and len(values) > 1:
            raise InvalidInput(f"query parameter {name!r} is given {len(values)} times; give it once")
        target = data
        *parents, leaf = name.split(".")
        for parent in parents:
            target = target.setdefault(parent, {})
        target[leaf] = [_scalar(field, v) for v in values] if field.is_repeated else _scalar(field, values[0])
    return data


def _scalar(field: FieldDescriptor, value: str) -> object:
    # ParseDict reads numbers and enum names from strings; booleans it wants as JSON booleans.
    if field.type == FieldDescriptor.TYPE_BOOL:
        lowered = value.lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0", ""):
            return False
        raise InvalidInput(f"{field.json_name} must be true or false, not {value!r}")
    return value


def _snake_path(json_path: str, descriptor: Descriptor) -> str:
    parts, current = [], descriptor
    for part in json_path.split("."):
        field = next(f for f in current.fields if f.json_name == part)
        parts.append(field.name)
        current = field.message_type
    return ".".join(parts)
