"""Domain errors: what went wrong, in words a person can act on.

Service logic raises these and knows nothing of gRPC; `secondbrain.service.error_mapping` turns each into a
status code in one place, and the CLI prints the message.
"""


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


class NotBuiltYet(SecondbrainError):
    """The operation is part of the API but this version does not implement it."""


class ConfigError(SecondbrainError):
    """The configuration (environment or the vault's secondbrain.json) is invalid; the message names the key."""
