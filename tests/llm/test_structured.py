"""JSON from models that wrap it in prose or fences."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from secondbrain.llm.structured import MalformedReply, extract_json

VALUE = {"query": "pgvector decision", "alternates": ["why postgres", "vector store choice"]}


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps(VALUE),
        f"```json\n{json.dumps(VALUE, indent=2)}\n```",
        f"Sure! Here is the JSON you asked for:\n```\n{json.dumps(VALUE)}\n```\nLet me know if you need more.",
        f"The standalone query is {json.dumps(VALUE)} as requested.",
        f"  \n{json.dumps(VALUE)}\n\n",
    ],
)
def test_finds_the_json(reply: str) -> None:
    assert extract_json(reply) == VALUE


def test_skips_braces_that_are_not_json() -> None:
    assert extract_json('Using {curly} words first, then {"a": 1}') == {"a": 1}


def test_no_json_is_a_malformed_reply() -> None:
    with pytest.raises(MalformedReply, match="no JSON"):
        extract_json("I cannot help with that.")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=10), json_values, min_size=1, max_size=4), st.text(max_size=40))
def test_any_object_survives_a_prose_preamble(value: dict, prose: str) -> None:
    prose = prose.replace("{", "(").replace("[", "(")
    assert extract_json(f"{prose}\n```json\n{json.dumps(value)}\n```") == value
