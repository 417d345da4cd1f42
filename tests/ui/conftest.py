"""The browser tests run against the gateway stack of tests/gateway (itself built on tests/chat's)."""

from tests.chat.conftest import stack  # noqa: F401
from tests.gateway.conftest import gateway  # noqa: F401
