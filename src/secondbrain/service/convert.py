"""Small conversions every servicer needs between domain values and protobuf well-known types."""

from __future__ import annotations

from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp


def timestamp(value: datetime | None) -> Timestamp | None:
    """A protobuf Timestamp for `value`; None (the field left unset) for None."""
    if value is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(value)
    return stamp
