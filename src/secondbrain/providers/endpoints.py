"""Where each provider lives and which variable holds its key: `endpoints.json`, one entry per vendor, read by chat
(`secondbrain.llm.presets` adds the models), embedding and rerank alike, so one variable (TOGETHER_API_KEY,
OLLAMA_URL) points every kind of call at the same place.

A base URL is the one an OpenAI-compatible SDK expects (ending in `/v1` where the vendor has one); `api_root` gives
the root that other routes (Ollama's `/api/embed`, `/v1/rerank`) hang from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from secondbrain.providers.context import ProviderContext


class Endpoint(BaseModel):
    """One provider's address and key variable, as `endpoints.json` (or a vault's override of a chat provider)
    gives it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    display_name: str = Field(min_length=1)
    base_url: str | None = None
    # An environment variable that, when set, replaces base_url (plus base_url_env_suffix): OLLAMA_URL, for one.
    base_url_env: str | None = None
    base_url_env_suffix: str = ""
    api_key_env: str | None = None

    def context(self, provider_id: str, env: Mapping[str, str]) -> ProviderContext:
        """The provider as `env` configures it: base_url_env, when set, replaces the base URL; the key is read from
        api_key_env (None when the variable is unset or the provider takes no key)."""
        base_url = self.base_url or ""
        if self.base_url_env and env.get(self.base_url_env):
            base_url = env[self.base_url_env].rstrip("/") + self.base_url_env_suffix
        api_key = env.get(self.api_key_env) if self.api_key_env else None
        return ProviderContext(provider_id, self.display_name, base_url, self.api_key_env, api_key)


@cache
def endpoints() -> dict[str, Endpoint]:
    """Every provider shipped with secondbrain, by id."""
    raw = json.loads((resources.files(__package__) / "endpoints.json").read_text(encoding="utf-8"))
    return {provider_id: Endpoint.model_validate(entry) for provider_id, entry in raw.items()}


def api_root(base_url: str) -> str:
    """The root of a provider's API: `base_url` without a trailing `/` or OpenAI-compatible `/v1`."""
    return base_url.rstrip("/").removesuffix("/v1")
