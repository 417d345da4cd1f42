"""Small conversions every servicer and client needs between domain values and protobuf types."""

from __future__ import annotations

from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp

from secondbrain.v1 import retrieval_pb2 as common

# A message's author: the domain's word for it (a ChatMessage's role, the chat store's) and the proto's MessageRole.
ROLE_VALUES: dict[str, common.MessageRole.ValueType] = {
    "user": common.MESSAGE_ROLE_USER,
    "assistant": common.MESSAGE_ROLE_ASSISTANT,
}
ROLE_WORDS: dict[common.MessageRole.ValueType, str] = {value: word for word, value in ROLE_VALUES.items()}


def timestamp(value: datetime | None) -> Timestamp | None:
    """A protobuf Timestamp for `value`; None (the field left unset) for None."""
    if value is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(value)
    return stamp
