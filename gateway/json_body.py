"""The one JSON reader of every door that takes a JSON body (the REST endpoints, `/v1/chat/completions`, `/mcp`):
refusals a person can act on, as InvalidInput, for text that is not JSON, nesting too deep to read, and a number too
long to be any field's value.

Python turns a JSON integer into an `int` whatever its length, and refuses one of over 4,300 digits with a plain
ValueError (found by a probe: `"maxPassages": 999...` was a 500 with a traceback in the log, a 503 through Envoy);
an integer of a million digits short of that limit would also take seconds to convert back to text. No field of ours
takes a number longer than a uint64's 20 digits or a double's shortest round trip (about 25 characters), so a number
token of more than MAX_NUMBER_CHARS characters is refused before it is converted.
"""

from __future__ import annotations

import json

from secondbrain.errors import InvalidInput

MAX_NUMBER_CHARS = 100


class NumberTooLong(InvalidInput):
    """A number token of more than MAX_NUMBER_CHARS characters."""


class _Token(Exception):
    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def _bounded_int(token: str) -> int:
    if len(token) > MAX_NUMBER_CHARS:
        raise _Token(token)
    return int(token)


def _bounded_float(token: str) -> float:
    if len(token) > MAX_NUMBER_CHARS:
        raise _Token(token)
    return float(token)


def parse_json(raw: bytes | str, what: str = "request body") -> object:
    """The value `raw` holds; InvalidInput naming `what` when it is not JSON, nested too deep, or has a number of
    more than MAX_NUMBER_CHARS characters. An empty (or all whitespace) body is an empty object."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw, parse_int=_bounded_int, parse_float=_bounded_float)
    except _Token as error:
        raise NumberTooLong(
            f"the {what} has a number of {len(error.token):,} characters ({error.token[:12]}...); "
            f"a number here has at most {MAX_NUMBER_CHARS}, and no field takes more than 20 digits"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InvalidInput(f"the {what} is not valid JSON: {error}") from None
    except RecursionError:
        # The parser recurses once per level. (The conversion after it cannot go as deep: json_format stops at 100
        # levels of messages, and no field of ours takes arbitrary JSON.)
        raise InvalidInput(
            f"the {what} is nested too deeply to read (hundreds of levels of arrays or objects); "
            "no request needs more than a few"
        ) from None
