"""Who a provider is, as every call to it and every message about it needs to know: its id and name, where it
lives, and its key (which messages must never show)."""

from __future__ import annotations

from dataclasses import dataclass


def scrub(text: str, *secrets: str | None) -> str:
    """`text` with every secret (and any long prefix of it that a vendor echoes back) replaced by ***."""
    for secret in secrets:
        if secret and len(secret) >= 8:
            text = text.replace(secret, "***")
            # Vendors echo a truncated key ("sk-abc123...wxyz"): hide any 8+ character prefix too.
            for length in range(len(secret) - 1, 7, -1):
                text = text.replace(secret[:length], "***")
    return text


@dataclass(frozen=True)
class ProviderContext:
    """One provider as a client of it is built with and as an error message names it."""

    provider_id: str
    display_name: str
    base_url: str
    api_key_env: str | None
    api_key: str | None

    def scrub(self, text: str) -> str:
        return scrub(text, self.api_key)
