"""Which environment variables a vault's settings may name for a provider (`api_key_env`, `base_url_env`,
`requires_env`), and which key may go to a URL the vault sets itself.

A vault's `secondbrain.json` is written by whoever can write the vault: a collaborator on a shared or synced vault, a
committer to the repository a deployment syncs from. A key variable's value goes to the provider's URL as a bearer
token, and that URL is the vault's to set too, so a variable named freely would send any secret of this machine to
any server (found by a probe: `api_key_env: SECONDBRAIN_API_TOKEN` with a `base_url` of its own got ingest to send the
API token along with the notes). So a key variable must be named as one (`..._API_KEY`), and a URL variable as one
(`..._BASE_URL`, or a provider's own such as OLLAMA_URL): never SECONDBRAIN_API_TOKEN, DATABASE_URL or the like.

And a provider the vault moves to a URL of its own (`base_url`) is sent only a key the operator set for the vault's
own providers (`SECONDBRAIN_..._API_KEY`), or none: otherwise `base_url` alone would send OPENAI_API_KEY (or any
`..._API_KEY` of this machine) to the vault writer's server. To move a built-in provider with its own key, the operator
sets its URL variable (OPENAI_BASE_URL); the vault cannot.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

_KEY = re.compile(r"[A-Z][A-Z0-9_]*_API_KEY")
_URL = re.compile(r"[A-Z][A-Z0-9_]*_BASE_URL|OLLAMA_URL")


def _key_variable(name: str | None) -> str | None:
    if name is not None and not _KEY.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a key variable's name: it must end in _API_KEY (like COHERE_API_KEY or "
            "MY_PROXY_API_KEY), so that a vault's settings cannot send another secret of this machine to a provider"
        )
    return name


def _url_variable(name: str | None) -> str | None:
    if name is not None and not _URL.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a provider URL variable's name: it must end in _BASE_URL (like OPENAI_BASE_URL), or be "
            "OLLAMA_URL, so that a vault's settings cannot aim a provider at another variable of this machine"
        )
    return name


def _any_variable(name: str) -> str:
    if not (_KEY.fullmatch(name) or _URL.fullmatch(name)):
        raise ValueError(f"{name!r} is neither a key variable's name (..._API_KEY) nor a URL variable's (..._BASE_URL)")
    return name


KeyVariable = Annotated[str | None, AfterValidator(_key_variable)]
UrlVariable = Annotated[str | None, AfterValidator(_url_variable)]
ProviderVariable = Annotated[str, AfterValidator(_any_variable)]

# The prefix of a key variable the operator set for providers a vault moves to URLs of its own.
VAULT_PROVIDER_KEY_PREFIX = "SECONDBRAIN_"


def key_for_own_url(base_url: str | None, api_key_env: str | None) -> None:
    """Raise ValueError when a vault's own `base_url` would be sent a key not set for it (see the module)."""
    if base_url is not None and api_key_env is not None and not api_key_env.startswith(VAULT_PROVIDER_KEY_PREFIX):
        raise ValueError(
            f"a provider at a URL of the vault's own (base_url) is sent only a key the operator set for it: name a "
            f"variable {VAULT_PROVIDER_KEY_PREFIX}..._API_KEY (not {api_key_env}), or none; to move a built-in "
            "provider with its own key, set its URL variable (OPENAI_BASE_URL, ...) instead"
        )
