"""Availability follows the environment; the extractive provider is the default only when nothing else is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from secondbrain.errors import ConfigError, FailedPrecondition, InvalidInput
from secondbrain.llm import EXTRACTIVE, ChatMessage, ChatRequest, ProviderCatalog
from secondbrain.llm.extractive import CHOSEN_PREAMBLE, PREAMBLE, quoted_only
from secondbrain.llm.presets import ProviderOverride
from secondbrain.vault_config import load_vault_config


def catalog(env: dict[str, str], **kwargs) -> ProviderCatalog:
    return ProviderCatalog.from_overrides({}, env, **kwargs)


def test_no_keys_leaves_only_the_extractive_provider() -> None:
    options = catalog({}).options()
    assert [o.id for o in options if o.available] == [EXTRACTIVE]
    reasons = {o.id: o.unavailable_reason for o in options}
    assert reasons["anthropic"] == "set ANTHROPIC_API_KEY"
    assert reasons["ollama"] == "set OLLAMA_URL"
    assert catalog({}).default().provider == EXTRACTIVE


@pytest.mark.parametrize(
    ("variable", "provider"),
    [
        ("ANTHROPIC_API_KEY", "anthropic"),
        ("OPENAI_API_KEY", "openai"),
        ("TOGETHER_API_KEY", "together"),
        ("OPENROUTER_API_KEY", "openrouter"),
        ("OLLAMA_URL", "ollama"),
    ],
)
def test_a_key_makes_its_provider_available_and_the_default(variable: str, provider: str) -> None:
    chosen = catalog({variable: "value-of-the-key"})
    assert set(chosen.available()) == {provider, EXTRACTIVE}
    assert chosen.default().provider == provider


def test_configured_default_wins_when_available() -> None:
    env = {"OPENAI_API_KEY": "k1", "ANTHROPIC_API_KEY": "k2"}
    default = catalog(env, default_provider="openai", default_model="gpt-4.1-mini").default()
    assert (default.provider, default.model) == ("openai", "gpt-4.1-mini")
    # Configured but without its key: fall back to what is available.
    assert catalog({"ANTHROPIC_API_KEY": "k"}, default_provider="openai").default().provider == "anthropic"


def test_empty_key_counts_as_unset() -> None:
    assert catalog({"ANTHROPIC_API_KEY": ""}).available() == [EXTRACTIVE]


def test_ollama_url_becomes_the_base_url() -> None:
    context = catalog({"OLLAMA_URL": "http://gpu-box:11434/"}).context("ollama")
    assert context.base_url == "http://gpu-box:11434/v1"


def test_check_names_the_choices() -> None:
    chosen = catalog({"ANTHROPIC_API_KEY": "k"})
    chosen.check("anthropic", "claude-haiku-5-5")
    with pytest.raises(InvalidInput, match="choose one of: anthropic, extractive"):
        chosen.check("nope", "x")
    with pytest.raises(InvalidInput, match="set OPENAI_API_KEY"):
        chosen.check("openai", "gpt-4.1-mini")
    with pytest.raises(InvalidInput, match="claude-sonnet-5-5"):
        chosen.check("anthropic", "claude-9")


def test_unavailable_provider_cannot_be_built() -> None:
    with pytest.raises(FailedPrecondition, match="set TOGETHER_API_KEY"):
        catalog({}).provider("together")


def test_bad_default_in_vault_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"chat\.default_provider"):
        catalog({}, default_provider="antropic")
    with pytest.raises(ConfigError, match=r"chat\.default_model"):
        catalog({}, default_provider="anthropic", default_model="gpt-4.1-mini")


def test_from_a_vaults_secondbrain_json(tmp_path: Path) -> None:
    (tmp_path / "secondbrain.json").write_text(
        json.dumps({"chat": {"default_provider": "ollama", "providers": {"ollama": {"models": [{"id": "phi4"}]}}}})
    )
    vault = load_vault_config(tmp_path)
    assert isinstance(vault.chat.providers["ollama"], ProviderOverride)
    chosen = ProviderCatalog.from_overrides(
        vault.chat.providers, {"OLLAMA_URL": "http://x"}, default_provider=vault.chat.default_provider
    )
    assert chosen.default().provider == "ollama"
    assert chosen.presets.providers["ollama"].model("phi4") is not None


def test_unknown_key_in_a_provider_override_names_it(tmp_path: Path) -> None:
    (tmp_path / "secondbrain.json").write_text(json.dumps({"chat": {"providers": {"ollama": {"modles": []}}}}))
    with pytest.raises(ConfigError, match=r"chat\.providers\.ollama\.modles"):
        load_vault_config(tmp_path)


async def test_the_quoting_answer_says_whether_quoting_was_a_choice() -> None:
    request = ChatRequest(model="extractive", messages=[ChatMessage("user", "Tomatoes?")])

    async def opening(chosen_from: ProviderCatalog) -> str:
        said = [
            event.text async for event in chosen_from.provider(EXTRACTIVE).stream(request) if hasattr(event, "text")
        ]
        return said[0]

    # Nothing else could answer: no model is configured, and the answer says that.
    assert await opening(catalog({})) == PREAMBLE
    # A model could have answered: quoting was chosen (Settings, a /v1 model id, --provider), and it says that.
    chosen = await opening(catalog({"OPENAI_API_KEY": "value-of-the-key"}))
    assert chosen == CHOSEN_PREAMBLE and "No language model is configured" not in chosen
    # Neither is ever searched as the conversation's subject.
    assert quoted_only(f"{PREAMBLE} {CHOSEN_PREAMBLE} > Water weekly.").split() == [">", "Water", "weekly."]
