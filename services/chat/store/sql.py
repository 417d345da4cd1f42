"""What every statement of the chat's store shares: its timeout, and the one builder of an update's SET clause."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Seconds any one statement may take; the chat's queries are all by primary key or a small index range.
STATEMENT_TIMEOUT = 10.0


def set_clause(changes: Mapping[str, Any], allowed: Sequence[str], first: int, what: str) -> tuple[str, list[Any]]:
    """The SET clause of an update of `changes` (column -> value), numbered from `$first`, and its values in order.

    The clause always ends by moving `updated_at`, so an update with no changes still says when it happened. Column
    names are interpolated, so only those in `allowed` may pass: anything else raises ValueError ("not `what`
    columns").
    """
    unknown = set(changes) - set(allowed)
    if unknown:
        raise ValueError(f"not {what} columns: {sorted(unknown)}")
    columns = [column for column in allowed if column in changes]
    assignments = "".join(f"{column} = ${i}, " for i, column in enumerate(columns, start=first))
    return f"{assignments}updated_at = now()", [changes[column] for column in columns]
