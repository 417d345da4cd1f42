"""The providers' table (`secondbrain.providers.endpoints`): one entry per vendor, which chat, embedding and rerank
all read, and how the environment moves a provider or gives its key."""

from __future__ import annotations

import pytest

from secondbrain.llm.presets import load_presets
from secondbrain.providers import Endpoint, api_root, endpoints


def test_chat_takes_each_providers_endpoint_from_the_table() -> None:
    table = endpoints()
    presets = load_presets()
    shared = set(table) & set(presets.providers)
    assert shared == {"anthropic", "openai", "together", "openrouter", "ollama"}
    for provider_id in shared:
        endpoint = presets.providers[provider_id].model_dump(include=set(Endpoint.model_fields))
        assert Endpoint.model_validate(endpoint) == table[provider_id], provider_id


def test_the_base_url_variable_moves_a_provider_and_the_key_variable_gives_its_key() -> None:
    together = endpoints()["together"]
    assert together.context("together", {}).base_url == "https://api.together.xyz/v1"
    assert together.context("together", {}).api_key is None
    moved = together.context("together", {"TOGETHER_BASE_URL": "http://proxy:8000/v1/", "TOGETHER_API_KEY": "k"})
    assert (moved.base_url, moved.api_key, moved.api_key_env) == ("http://proxy:8000/v1", "k", "TOGETHER_API_KEY")
    assert moved.display_name == "Together AI" and moved.provider_id == "together"


def test_ollamas_variable_names_its_root_and_gets_the_v1_suffix() -> None:
    context = endpoints()["ollama"].context("ollama", {"OLLAMA_URL": "http://gpu-box:11434/"})
    assert (context.base_url, context.api_key_env, context.api_key) == ("http://gpu-box:11434/v1", None, None)


def test_an_empty_base_url_variable_counts_as_unset() -> None:
    assert endpoints()["openai"].context("openai", {"OPENAI_BASE_URL": ""}).base_url == "https://api.openai.com/v1"


@pytest.mark.parametrize(
    ("base_url", "root"),
    [
        ("https://api.together.xyz/v1", "https://api.together.xyz"),
        ("http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434"),
        ("https://api.cohere.com", "https://api.cohere.com"),
        ("https://openrouter.ai/api/v1", "https://openrouter.ai/api"),
    ],
)
def test_api_root_drops_the_openai_compatible_v1(base_url: str, root: str) -> None:
    assert api_root(base_url) == root
