"""The one builder of the chat store's SET clauses: the only place a column name is written into SQL."""

import pytest

from secondbrain.chat.store.sql import set_clause


def test_the_set_clause_numbers_the_changes_from_first_and_always_moves_updated_at() -> None:
    clause, values = set_clause({"persona_id": None, "title": "Plans"}, ("title", "persona_id"), 2, "conversation")
    assert clause == "title = $2, persona_id = $3, updated_at = now()"
    assert values == ["Plans", None]
    assert set_clause({}, ("title",), 1, "conversation") == ("updated_at = now()", [])


def test_a_column_outside_the_allowed_ones_never_reaches_the_sql() -> None:
    with pytest.raises(ValueError, match=r"not settings columns: \['id = id; DROP TABLE chat_settings; --'\]"):
        set_clause({"model": "m", "id = id; DROP TABLE chat_settings; --": 1}, ("model",), 1, "settings")
