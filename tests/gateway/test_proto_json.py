"""Query strings and JSON Schemas from the proto descriptors: the parts of the shim that are pure functions."""

from __future__ import annotations

import jsonschema
import pytest
from google.protobuf import timestamp_pb2
from hypothesis import given
from hypothesis import strategies as st

from secondbrain.chat.v1 import chat_service_pb2 as chat
from secondbrain.errors import InvalidInput
from secondbrain.gateway.openapi import openapi_document
from secondbrain.gateway.proto_json import from_json, from_query, to_json
from secondbrain.ingest.v1 import ingest_service_pb2 as ingest
from secondbrain.retrieve.v1 import retrieve_service_pb2 as retrieve
from secondbrain.v1 import retrieval_pb2 as common

DOCUMENT = openapi_document()


def _validate(message: object, name: str) -> None:
    jsonschema.validate(message, {"$ref": f"#/components/schemas/{name}", "components": DOCUMENT["components"]})


def test_a_query_string_fills_nested_and_repeated_fields() -> None:
    params = {"query": ["garden"], "mode": ["SEARCH_MODE_KEYWORD"], "limit": ["5"], "filters.folders": ["A", "B/C"]}
    message = from_json(from_query(params, retrieve.SearchRequest.DESCRIPTOR), retrieve.SearchRequest(), "query")
    assert message == retrieve.SearchRequest(
        query="garden",
        mode=retrieve.SEARCH_MODE_KEYWORD,
        limit=5,
        filters=common.RetrievalFilters(folders=["A", "B/C"]),
    )


def test_snake_case_names_and_booleans_work_in_a_query_string() -> None:
    for value, expected in [("true", True), ("1", True), ("false", False), ("0", False)]:
        data = from_query({"include_files": [value]}, ingest.GetIndexStatusRequest.DESCRIPTOR)
        assert from_json(data, ingest.GetIndexStatusRequest(), "query").include_files is expected
    with pytest.raises(InvalidInput, match="includeFiles must be true or false"):
        from_query({"includeFiles": ["maybe"]}, ingest.GetIndexStatusRequest.DESCRIPTOR)


@pytest.mark.parametrize(
    ("params", "says"),
    [
        (
            {"q": ["x"]},
            "unknown query parameter 'q'; known: filters.dateFrom, filters.dateTo, filters.fileTypes, filters.folders",
        ),
        ({"limit": ["1", "2"]}, "given 2 times"),
    ],
)
def test_a_bad_query_string_says_what_is_wrong(params: dict[str, list[str]], says: str) -> None:
    with pytest.raises(InvalidInput, match=says):
        from_query(params, retrieve.SearchRequest.DESCRIPTOR)


def test_a_wrong_type_is_refused_by_name() -> None:
    with pytest.raises(InvalidInput, match="limit"):
        from_json(from_query({"limit": ["lots"]}, retrieve.SearchRequest.DESCRIPTOR), retrieve.SearchRequest(), "q")


@given(
    title=st.text(max_size=40),
    count=st.integers(min_value=-(2**31), max_value=2**31 - 1),
    seconds=st.integers(min_value=0, max_value=253402300799),
    persona=st.text(max_size=10),
)
def test_any_conversation_as_json_matches_its_schema_and_reads_back(
    title: str, count: int, seconds: int, persona: str
) -> None:
    conversation = chat.Conversation(
        id="c1",
        title=title,
        persona_id=persona,
        message_count=count,
        create_time=timestamp_pb2.Timestamp(seconds=seconds),
        messages=[chat.Message(id="m1", role=common.MESSAGE_ROLE_USER, content=title)],
    )
    data = to_json(conversation)
    _validate(data, "secondbrain.chat.v1.Conversation")
    assert from_json(data, chat.Conversation(), "x") == conversation


def test_enums_are_names_and_unset_fields_are_present_with_their_defaults() -> None:
    data = to_json(chat.Message(role=common.MESSAGE_ROLE_ASSISTANT))
    assert data["role"] == "MESSAGE_ROLE_ASSISTANT" and data["content"] == "" and data["status"]
    _validate(data, "secondbrain.chat.v1.Message")
    with pytest.raises(jsonschema.ValidationError):
        _validate({**data, "role": "MESSAGE_ROLE_WIZARD"}, "secondbrain.chat.v1.Message")
