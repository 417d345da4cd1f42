"""Which environment variables a vault's settings may name for a provider (`api_key_env`, `base_url_env`).

A vault's `secondbrain.json` is written by whoever can write the vault: a collaborator on a shared or synced vault, a
committer to the repository a deployment syncs from. A key variable's value goes to the provider's URL as a bearer
token, and that URL is the vault's to set too, so a variable named freely would send any secret of this machine to
any server (found by a probe: `api_key_env: SECONDBRAIN_API_TOKEN` with a `base_url` of its own got ingest to send the
API token along with the notes). So a key variable must be named as one (`..._API_KEY`), and a URL variable as one
(`..._BASE_URL`, or a provider's own such as OLLAMA_URL): never SECONDBRAIN_API_TOKEN, DATABASE_URL or the like.
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


KeyVariable = Annotated[str | None, AfterValidator(_key_variable)]
UrlVariable = Annotated[str | None, AfterValidator(_url_variable)]
