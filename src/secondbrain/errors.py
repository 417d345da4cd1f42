"""Domain errors: what went wrong, in words a person can act on.

Service logic raises these and knows nothing of gRPC; `secondbrain.service.error_mapping` turns each into a
status code in one place, and the CLI prints the message. `describe_problems` words what pydantic found wrong
in a configuration as the keys to fix, for a ConfigError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class SecondbrainError(Exception):
    """Base of every error whose message is meant for the person using secondbrain."""


class InvalidInput(SecondbrainError):
    """The request is malformed or names something impossible; fix the request."""


class NotFound(SecondbrainError):
    """The request names something that does not exist."""


class FailedPrecondition(SecondbrainError):
    """The system is not in a state where the request can run (for example, the index needs a sync first)."""


class Unavailable(SecondbrainError):
    """Something this depends on (the database, a provider, another service) cannot be reached; retrying may work."""


class ResourceExhausted(SecondbrainError):
    """The request is too large or a quota ran out."""


class TimedOut(SecondbrainError):
    """Something this depends on (the database) gave up on the request before it finished; a smaller one may not."""


class ConfigError(SecondbrainError):
    """The configuration (environment or the vault's secondbrain.json) is invalid; the message names the key."""


def describe_problems(error: ValidationError, name_of: Mapping[str, str] | None = None, prefix: str = "") -> str:
    """A ConfigError's detail: one line per problem pydantic found, each naming the key a person has to fix
    (`prefix` and its dotted path; a first part in `name_of` is shown as that name, an environment variable's)."""
    lines = []
    for problem in error.errors():
        location = [str(part) for part in problem["loc"]]
        if name_of and location and location[0] in name_of:
            location[0] = name_of[location[0]]
        key = ".".join(location) or "(top level)"
        lines.append(f"{prefix}{key}: {problem['msg']}")
    return "\n".join(lines)
