"""Configuration: defaults that work, and errors that name the key to fix."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from secondbrain.config import default_data_dir, load_config, load_settings
from secondbrain.errors import ConfigError
from secondbrain.llm.presets import ProviderOverride, apply_overrides, load_presets
from secondbrain.retrieve.pipeline import Retriever
from secondbrain.vault_config import load_vault_config


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("SECONDBRAIN_") or key == "DATABASE_URL":
            monkeypatch.delenv(key)


def test_defaults_need_no_configuration() -> None:
    settings = load_settings()
    assert settings.database_url is None
    assert (settings.ingest_port, settings.retrieve_port, settings.chat_port) == (50051, 50052, 50053)
    assert settings.host == "127.0.0.1"


def test_processes_migrate_at_start_unless_told_a_job_does(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().migrate_on_start is True
    monkeypatch.setenv("SECONDBRAIN_MIGRATE_ON_START", "false")
    assert load_settings().migrate_on_start is False


def test_data_dir_follows_xdg_data_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_data_dir() == tmp_path / "secondbrain"
    assert load_settings().embedded_pgdata == tmp_path / "secondbrain" / "postgres"


def test_environment_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:p@db:5432/notes")
    monkeypatch.setenv("SECONDBRAIN_RETRIEVE_PORT", "6000")
    monkeypatch.setenv("SECONDBRAIN_RETRIEVE_ADDRESS", "retrieve:50052")
    settings = load_settings()
    assert settings.database_url == "postgresql://u:p@db:5432/notes"
    assert settings.port_for("retrieve") == 6000
    assert settings.retrieve_address == "retrieve:50052"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SECONDBRAIN_INGEST_PORT", "not-a-port"),
        ("SECONDBRAIN_CHAT_PORT", "70000"),
        ("SECONDBRAIN_LOG_FORMAT", "xml"),
        ("SECONDBRAIN_SHUTDOWN_GRACE_SECONDS", "-1"),
    ],
)
def test_bad_environment_names_the_variable(monkeypatch: pytest.MonkeyPatch, variable: str, value: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert variable in str(raised.value)


def test_every_address_defaults_to_the_host_and_its_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECONDBRAIN_CHAT_ADDRESS", "chat.secondbrain.svc:50053")
    settings = load_settings()
    assert settings.address_of("ingest") == "127.0.0.1:50051"
    assert settings.address_of("chat") == "chat.secondbrain.svc:50053"
    assert (settings.port_for("shim"), settings.port_for("gateway")) == (8081, 8080)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "notes.example"])
def test_listening_beyond_loopback_needs_a_token(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setenv("SECONDBRAIN_HOST", host)
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert "SECONDBRAIN_API_TOKEN" in str(raised.value) and host in str(raised.value)
    monkeypatch.setenv("SECONDBRAIN_API_TOKEN", "a-long-random-secret")
    settings = load_settings()
    assert settings.token == "a-long-random-secret"
    assert "a-long-random-secret" not in repr(settings), "the token never shows in a repr or a log"


def test_a_token_other_machines_may_guess_at_must_not_be_short(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECONDBRAIN_HOST", "0.0.0.0")
    monkeypatch.setenv("SECONDBRAIN_API_TOKEN", "a")
    with pytest.raises(ConfigError, match="at least 16 characters"):
        load_settings()
    monkeypatch.setenv("SECONDBRAIN_HOST", "127.0.0.1")
    assert load_settings().token == "a", "on loopback only this machine's users can try it"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_needs_no_token(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setenv("SECONDBRAIN_HOST", host)
    assert load_settings().token is None


def test_cors_origins_are_a_comma_separated_list_of_origins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECONDBRAIN_API_TOKEN", "a-long-random-secret")
    monkeypatch.setenv("SECONDBRAIN_CORS_ORIGINS", "http://localhost:5173, https://notes.example/")
    assert load_settings().cors_origins == ["http://localhost:5173", "https://notes.example"]
    monkeypatch.setenv("SECONDBRAIN_CORS_ORIGINS", "notes.example")
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert "SECONDBRAIN_CORS_ORIGINS" in str(raised.value) and "scheme://host" in str(raised.value)


def test_with_no_token_only_this_machines_pages_may_be_cors_origins(monkeypatch: pytest.MonkeyPatch) -> None:
    # The gateway with no token answers loopback origins only; an origin elsewhere would be let through Envoy's CORS
    # and refused by the shim: said at start instead.
    monkeypatch.setenv("SECONDBRAIN_CORS_ORIGINS", "http://localhost:5173, https://notes.example")
    with pytest.raises(ConfigError, match=r"https://notes\.example: a page of another origin"):
        load_settings()
    monkeypatch.setenv("SECONDBRAIN_CORS_ORIGINS", "http://localhost:5173, http://127.0.0.1:3000")
    assert len(load_settings().cors_origins) == 2


def test_vault_without_config_file_gets_defaults(tmp_path: Path) -> None:
    assert load_vault_config(tmp_path).ingest.ignore == []


def test_vault_config_is_read(tmp_path: Path) -> None:
    (tmp_path / "secondbrain.json").write_text(json.dumps({"ingest": {"ignore": ["Archive/**"]}}))
    assert load_vault_config(tmp_path).ingest.ignore == ["Archive/**"]


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ({"ingest": {"ignore": "Archive/**"}}, "ingest.ignore"),
        ({"ingest": {"ignroe": ["x"]}}, "ingest.ignroe"),
        ({"injest": {}}, "injest"),
        ({"retrieve": {"time_zone": "Lisbon"}}, "retrieve.time_zone"),
    ],
)
def test_bad_vault_config_names_the_key(tmp_path: Path, content: dict, named: str) -> None:
    (tmp_path / "secondbrain.json").write_text(json.dumps(content))
    with pytest.raises(ConfigError) as raised:
        load_vault_config(tmp_path)
    assert named in str(raised.value)
    assert "secondbrain.json" in str(raised.value)


_PROVIDER = {"protocol": "openai", "base_url": "http://127.0.0.1:9999/v1", "models": [{"id": "m"}]}


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ({"retrieve": {"reranker": {"provider": "custom", "api_key_env": "SECONDBRAIN_API_TOKEN"}}}, "api_key_env"),
        ({"retrieve": {"reranker": {"api_key_env": "DATABASE_URL"}}}, "api_key_env"),
        ({"chat": {"providers": {"leak": {**_PROVIDER, "api_key_env": "SECONDBRAIN_API_TOKEN"}}}}, "api_key_env"),
        ({"chat": {"providers": {"leak": {**_PROVIDER, "api_key_env": "AWS_SECRET_ACCESS_KEY"}}}}, "api_key_env"),
        ({"chat": {"providers": {"leak": {**_PROVIDER, "base_url_env": "DATABASE_URL"}}}}, "base_url_env"),
    ],
)
def test_a_vault_may_name_no_secret_but_a_key_for_a_provider(tmp_path: Path, content: dict, named: str) -> None:
    """Found by a probe: a vault's settings named SECONDBRAIN_API_TOKEN as a provider's key, with a URL of their
    own, and ingest sent the token there with the notes."""
    (tmp_path / "secondbrain.json").write_text(json.dumps(content))
    with pytest.raises(ConfigError) as raised:
        load_vault_config(tmp_path)
    assert named in str(raised.value)
    assert "cannot" in str(raised.value), "the message says why"


def test_a_vault_may_name_its_own_key_and_url_variables(tmp_path: Path) -> None:
    provider = {**_PROVIDER, "api_key_env": "SECONDBRAIN_PROXY_API_KEY", "base_url_env": "MY_PROXY_BASE_URL"}
    content = {
        "chat": {"providers": {"proxy": provider, "openai": {"api_key_env": "MY_OPENAI_API_KEY"}}},
        "retrieve": {"reranker": {"provider": "custom", "api_key_env": "SECONDBRAIN_RERANK_API_KEY"}},
    }
    (tmp_path / "secondbrain.json").write_text(json.dumps(content))
    loaded = load_vault_config(tmp_path)
    assert loaded.retrieve.reranker.api_key_env == "SECONDBRAIN_RERANK_API_KEY"
    assert loaded.chat.providers["proxy"].api_key_env == "SECONDBRAIN_PROXY_API_KEY"
    assert loaded.chat.providers["openai"].api_key_env == "MY_OPENAI_API_KEY", "a key for the provider's own URL"


def test_a_provider_the_vault_moves_is_not_sent_the_providers_own_key(tmp_path: Path) -> None:
    """Found by a review: `chat.providers.openai.base_url` alone sent OPENAI_API_KEY to the vault writer's server."""
    moved = {
        "chat": {"providers": {"openai": {"base_url": "https://evil.example/v1", "api_key_env": "OPENAI_API_KEY"}}}
    }
    (tmp_path / "secondbrain.json").write_text(json.dumps(moved))
    with pytest.raises(ConfigError, match="sent only a key the operator set for it"):
        load_vault_config(tmp_path)
    overrides = {"openai": ProviderOverride(base_url="https://evil.example/v1")}
    context = apply_overrides(load_presets(), overrides).provider("openai").context("openai", {"OPENAI_API_KEY": "sk"})
    assert (context.base_url, context.api_key) == ("https://evil.example/v1", None)


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ({"chat": {"providers": {"mine": _PROVIDER}}}, "chat.providers.mine.base_url"),
        (
            {"chat": {"providers": {"openai": {"base_url": "https://evil.example/v1"}}}},
            "chat.providers.openai.base_url",
        ),
        ({"retrieve": {"reranker": {"provider": "custom", "base_url": "https://evil.example"}}}, "retrieve.reranker"),
    ],
)
def test_a_vault_names_an_endpoint_of_its_own_only_where_the_operator_allows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: dict, named: str
) -> None:
    """Found by a third probe (issue 47, friction 10): whoever could write the vault's secondbrain.json could add a
    provider with a base_url of theirs and, once it was chosen, receive every prompt with its passages."""
    (tmp_path / "secondbrain.json").write_text(json.dumps(content))
    monkeypatch.setenv("SECONDBRAIN_VAULT", str(tmp_path))
    with pytest.raises(ConfigError) as raised:
        load_config()
    assert named in str(raised.value) and "SECONDBRAIN_ALLOW_VAULT_PROVIDERS=1" in str(raised.value)
    monkeypatch.setenv("SECONDBRAIN_ALLOW_VAULT_PROVIDERS", "1")
    assert load_config().settings.allow_vault_providers


def test_a_vault_may_name_the_operators_url_variables_without_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = {"protocol": "openai", "base_url_env": "MY_PROXY_BASE_URL", "models": [{"id": "m"}]}
    (tmp_path / "secondbrain.json").write_text(json.dumps({"chat": {"providers": {"proxy": provider}}}))
    monkeypatch.setenv("SECONDBRAIN_VAULT", str(tmp_path))
    assert load_config().vault.chat.providers["proxy"].base_url_env == "MY_PROXY_BASE_URL"


def test_vault_config_that_is_not_json_says_where(tmp_path: Path) -> None:
    (tmp_path / "secondbrain.json").write_text('{"ingest": {"ignore": [}\n')
    with pytest.raises(ConfigError, match=r"not valid JSON \(line 1, column"):
        load_vault_config(tmp_path)


def test_vault_config_linked_out_of_the_vault_is_not_read(tmp_path: Path) -> None:
    vault, secret = tmp_path / "vault", tmp_path / "server.json"
    vault.mkdir()
    secret.write_text(json.dumps({"ingest": {"ignore": "root:x:0:0"}}))
    (vault / "secondbrain.json").symlink_to(secret)
    with pytest.raises(ConfigError, match="symlink to outside the vault") as raised:
        load_vault_config(vault)
    assert "root:x" not in str(raised.value)


def test_vault_that_is_not_a_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SECONDBRAIN_VAULT", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="SECONDBRAIN_VAULT"):
        load_config()


def test_the_time_zone_is_an_iana_name_and_decides_the_servers_now(tmp_path: Path) -> None:
    (tmp_path / "secondbrain.json").write_text(json.dumps({"retrieve": {"time_zone": "Pacific/Kiritimati"}}))
    settings = load_vault_config(tmp_path).retrieve
    assert settings.time_zone == "Pacific/Kiritimati"
    now = Retriever._now(SimpleNamespace(settings=settings))  # type: ignore[arg-type]
    assert now.utcoffset() == timedelta(hours=14), "a question's 'today' is the configured zone's"
    (tmp_path / "secondbrain.json").write_text(json.dumps({"retrieve": {"time_zone": "Lisbon"}}))
    with pytest.raises(ConfigError) as raised:
        load_vault_config(tmp_path)
    assert "an IANA name, like Europe/Lisbon" in str(raised.value)
