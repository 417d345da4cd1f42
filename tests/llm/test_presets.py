"""Presets: the shipped file is valid, a vault's overrides merge by model id, and every mistake names its key."""

from __future__ import annotations

import json

import pytest

from secondbrain.errors import ConfigError
from secondbrain.llm.presets import ModelPreset, ProviderOverride, apply_overrides, load_presets

DESIGN_RECORD_PROVIDERS = {"anthropic", "openai", "together", "openrouter", "ollama"}


def test_shipped_presets_cover_the_design_record() -> None:
    presets = load_presets()
    assert DESIGN_RECORD_PROVIDERS | {"extractive"} == set(presets.providers)
    for preset in presets.providers.values():
        assert preset.model(preset.default_model) is not None


def test_vault_adds_a_model_and_changes_the_default() -> None:
    merged = apply_overrides(
        load_presets(),
        {"ollama": ProviderOverride(models=[ModelPreset(id="llama3.3:70b")], default_model="llama3.3:70b")},
    )
    ollama = merged.providers["ollama"]
    assert ollama.default_model == "llama3.3:70b"
    assert ollama.model("llama3.2") is not None, "the shipped models stay"


def test_vault_overrides_a_model_by_id() -> None:
    merged = apply_overrides(
        load_presets(), {"openai": ProviderOverride(models=[ModelPreset(id="gpt-4.1-mini", context_window=5)])}
    )
    assert merged.providers["openai"].model("gpt-4.1-mini").context_window == 5
    assert [m.id for m in merged.providers["openai"].models].count("gpt-4.1-mini") == 1


def test_vault_defines_a_new_openai_compatible_provider() -> None:
    override = ProviderOverride(
        display_name="LM Studio",
        protocol="openai",
        base_url="http://127.0.0.1:1234/v1",
        models=[ModelPreset(id="qwen3-8b")],
    )
    preset = apply_overrides(load_presets(), {"lmstudio": override}).providers["lmstudio"]
    assert preset.default_model == "qwen3-8b"


def test_default_model_outside_the_list_names_the_key() -> None:
    with pytest.raises(ConfigError) as raised:
        apply_overrides(load_presets(), {"anthropic": ProviderOverride(default_model="claude-9")})
    assert "chat.providers.anthropic" in str(raised.value)
    assert "claude-9" in str(raised.value)


def test_new_provider_without_protocol_names_the_missing_key() -> None:
    with pytest.raises(ConfigError) as raised:
        apply_overrides(load_presets(), {"mine": ProviderOverride(models=[ModelPreset(id="m")])})
    assert "chat.providers.mine.protocol" in str(raised.value)


@pytest.mark.parametrize(
    ("document", "named"),
    [
        (
            {
                "providers": {
                    "x": {"display_name": "X", "protocol": "grpc", "default_model": "m", "models": [{"id": "m"}]}
                }
            },
            "providers.x.protocol",
        ),
        (
            {"providers": {"x": {"display_name": "X", "protocol": "openai", "default_model": "m", "models": []}}},
            "providers.x.models",
        ),
        (
            {
                "providers": {
                    "x": {
                        "display_name": "X",
                        "protocol": "openai",
                        "default_model": "m",
                        "models": [{"id": "m", "context_window": -1}],
                    }
                }
            },
            "providers.x.models.0.context_window",
        ),
    ],
)
def test_bad_presets_name_the_key(document: dict, named: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_presets(json.dumps(document))
    assert named in str(raised.value)


def test_presets_that_are_not_json() -> None:
    with pytest.raises(ConfigError, match=r"presets\.json: not valid JSON"):
        load_presets("{")
