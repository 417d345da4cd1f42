"""Typed configuration: the process environment plus the vault's `secondbrain.json`.

Two sources, two models. `Settings`, here, is how this install runs (database, ports, data directory) and comes
from the environment. `VaultConfig` (`vault_config.py`) is how a vault wants to be read and answered and travels with
the vault in `<vault>/secondbrain.json`. Nothing reads either at import time: `load_config()` is called by an
entrypoint, and `Config` holds both.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import parse_qs, unquote, urlsplit

import platformdirs
from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from secondbrain.errors import ConfigError, describe_problems
from secondbrain.service.auth import is_loopback, is_loopback_origin
from secondbrain.service.client_address import LOOPBACK, networks
from secondbrain.vault_config import VAULT_CONFIG_FILE, VaultConfig, load_vault_config, vault_endpoints

ENV_PREFIX = "SECONDBRAIN_"

# Default ports: a gRPC port per service, then the REST shim and Envoy (the one address a browser needs).
# A server given port 0 binds any free port.
DEFAULT_PORTS = {"ingest": 50051, "retrieve": 50052, "chat": 50053, "shim": 8081, "gateway": 8080}
# The shortest API token accepted when other machines can reach the servers.
MIN_OPEN_TOKEN_CHARS = 16
# How to make a good one, said wherever a token is refused.
TOKEN_HINT = "`python -c 'import secrets; print(secrets.token_urlsafe(32))'` makes a good one"


def default_data_dir() -> Path:
    """The user's data directory for secondbrain; follows XDG_DATA_HOME on Linux."""
    return Path(platformdirs.user_data_dir("secondbrain", appauthor=False))


def models_dir_in(env: Mapping[str, str]) -> Path:
    """`Settings.models_dir` as the variables of `env` configure it, for code that has no Settings (an embedder made
    outside a service): SECONDBRAIN_MODEL_CACHE_DIR, else models/ in SECONDBRAIN_DATA_DIR or the default."""
    if configured := env.get(f"{ENV_PREFIX}MODEL_CACHE_DIR"):
        return Path(configured)
    data_dir = env.get(f"{ENV_PREFIX}DATA_DIR")
    return (Path(data_dir) if data_dir else default_data_dir()) / "models"


class Settings(BaseSettings):
    """How this install runs, from the environment (`SECONDBRAIN_*`, plus `DATABASE_URL`)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "SECONDBRAIN_DATABASE_URL"),
        description="PostgreSQL with pgvector >= 0.8; unset starts the embedded PostgreSQL.",
    )
    data_dir: Path = Field(default_factory=default_data_dir, description="Where the embedded PostgreSQL keeps data.")
    model_cache_dir: Path | None = Field(
        default=None,
        description="Where the local model's ONNX export is made and kept (embedding.runtime onnx); unset: models/ "
        "in the data directory. Read-only is fine once the export is there.",
    )
    vault: Path | None = Field(default=None, description="The vault (a folder of markdown notes).")
    host: str = Field(
        default="127.0.0.1",
        description="Address every server binds to; anything but loopback needs SECONDBRAIN_API_TOKEN.",
    )
    api_token: SecretStr | None = Field(
        default=None,
        description="When set, every request needs 'Authorization: Bearer <token>'; unset, servers bind loopback only.",
    )
    ingest_port: int = Field(default=DEFAULT_PORTS["ingest"], ge=0, le=65535)
    retrieve_port: int = Field(default=DEFAULT_PORTS["retrieve"], ge=0, le=65535)
    chat_port: int = Field(default=DEFAULT_PORTS["chat"], ge=0, le=65535)
    shim_port: int = Field(default=DEFAULT_PORTS["shim"], ge=0, le=65535, description="The REST + SSE shim.")
    gateway_port: int = Field(
        default=DEFAULT_PORTS["gateway"], ge=0, le=65535, description="Envoy: the UI, grpc-web and /api/."
    )
    # Where each server is reached when it runs elsewhere (a Kubernetes service name, say); unset, SECONDBRAIN_HOST
    # and its port.
    ingest_address: str | None = Field(default=None, description="host:port where the shim reaches ingest.")
    retrieve_address: str | None = Field(default=None, description="host:port where chat and the shim reach retrieve.")
    chat_address: str | None = Field(default=None, description="host:port where the shim reaches chat.")
    tls_cert: Path | None = Field(
        default=None,
        description="A PEM certificate (its chain after it) Envoy serves HTTPS with, with SECONDBRAIN_TLS_KEY: a phone "
        "installs the web UI only over HTTPS. Unset: plain HTTP.",
    )
    tls_key: Path | None = Field(default=None, description="The PEM private key of SECONDBRAIN_TLS_CERT.")
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Browser origins, comma-separated, that may call the gateway from another site.",
    )
    sync_interval_seconds: float = Field(
        default=0,
        ge=0,
        description="When above 0, the ingest service syncs SECONDBRAIN_VAULT at start and then this often.",
    )
    chat_messages_per_minute: int = Field(
        default=30,
        ge=0,
        description="Questions one client may send a minute, per chat process (bursts up to the same); 0: no limit.",
    )
    trusted_proxy_hops: int = Field(
        default=0,
        ge=0,
        le=10,
        description="Proxies in front of Envoy (a load balancer, an Ingress) whose x-forwarded-for entries are "
        "trusted: a client is the address that many hops before the one Envoy saw. 0: the address Envoy saw.",
    )
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(LOOPBACK),
        description="Addresses or CIDR blocks, comma-separated, of the proxies whose x-forwarded-for is believed "
        "(Envoy and the shim reaching chat, Envoy reaching the shim); from any other peer the header is ignored.",
    )
    metrics_host: str = Field(
        default="127.0.0.1",
        description="Who may read the Prometheus metrics, which need no token: the gRPC services bind their /metrics "
        "to it, and the shim answers /metrics to other machines only when it is not loopback. Kubernetes sets "
        "0.0.0.0, behind its network policies.",
    )
    allow_vault_providers: bool = Field(
        default=False,
        description="Whether the vault's secondbrain.json may name endpoints of its own (a chat provider's or the "
        "reranker's base_url), which are sent questions and passages of the notes. Off, such a vault is refused at "
        "start, naming the key: whoever can write in the vault (a shared folder, a synced repository) could point "
        "one at a server of theirs. The operator's own variables (base_url_env, OPENAI_BASE_URL, OLLAMA_URL) are "
        "always used.",
    )
    metrics_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="Where a gRPC service serves Prometheus metrics over HTTP (/metrics); unset: its gRPC port + 1000.",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["auto", "json", "text"] = Field(
        default="auto", description="auto: short text lines when stderr is a terminal, else one JSON object a line."
    )
    shutdown_grace_seconds: float = Field(
        default=10.0, gt=0, le=300, description="How long in-flight streams may run on after SIGTERM."
    )
    db_connect_timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    db_pool_max_size: int = Field(default=10, ge=1, le=200)
    migrate_on_start: bool = Field(
        default=True,
        description="Apply pending migrations when a process opens the database; false where a migration Job applies "
        "them (Kubernetes). `secondbrain migrate` applies them either way.",
    )

    @property
    def embedded_pgdata(self) -> Path:
        return self.data_dir / "postgres"

    @property
    def models_dir(self) -> Path:
        """Where the local model's ONNX export is cached."""
        return self.model_cache_dir or self.data_dir / "models"

    @property
    def database_identity(self) -> str:
        """A short name of the database this configuration uses, the same in every process configured alike: a
        server tells it to callers, so a command configured for another database does not use that server. A hash,
        since a health check is open to anyone who reaches the port and a URL names hosts and users."""
        if self.database_url is None:
            # The embedded server is its data directory, wherever the process was started from.
            named = f"embedded:{self.data_dir.resolve()}"
        else:
            named = f"url:{_normalised_database_url(self.database_url)}"
        return hashlib.sha256(named.encode()).hexdigest()[:16]

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        if isinstance(value, str):
            return [origin.strip().rstrip("/") for origin in value.split(",") if origin.strip()]
        return value

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split_proxies(cls, value: object) -> object:
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    @field_validator("trusted_proxies")
    @classmethod
    def _check_proxies(cls, proxies: list[str]) -> list[str]:
        networks(proxies)  # a ValueError names the one that is not an address
        return proxies

    @field_validator("cors_origins")
    @classmethod
    def _check_origins(cls, origins: list[str]) -> list[str]:
        for origin in origins:
            if not origin.startswith(("http://", "https://")) or origin.count("/") != 2:
                raise ValueError(
                    f"{origin!r} is not an origin: write scheme://host[:port], such as http://localhost:5173"
                )
        return origins

    @field_validator("api_token")
    @classmethod
    def _check_token(cls, token: SecretStr | None) -> SecretStr | None:
        # It travels in an HTTP header as `Bearer <token>`: a space would split it, and only visible ASCII is safe.
        if token is not None and not re.fullmatch(r"[!-~]+", token.get_secret_value()):
            raise ValueError(
                "SECONDBRAIN_API_TOKEN must be visible ASCII characters without spaces (it is sent in an HTTP "
                f"header); {TOKEN_HINT}"
            )
        return token

    @model_validator(mode="after")
    def _tls_as_a_pair(self) -> Settings:
        # (Whether the files can be read is checked where Envoy's configuration is made: only Envoy reads them.)
        if (self.tls_cert is None) != (self.tls_key is None):
            given, missing = ("CERT", "KEY") if self.tls_key is None else ("KEY", "CERT")
            raise ValueError(
                f"SECONDBRAIN_TLS_{given} is set but SECONDBRAIN_TLS_{missing} is not: Envoy serves HTTPS with both "
                "(a certificate and its private key, PEM files), or plain HTTP with neither"
            )
        return self

    @model_validator(mode="after")
    def _open_only_with_a_token(self) -> Settings:
        if self.api_token is None and (foreign := [o for o in self.cors_origins if not is_loopback_origin(o)]):
            # With no token the gateway answers this machine's own pages only (gateway/local_requests.py).
            raise ValueError(
                f"SECONDBRAIN_CORS_ORIGINS lists {', '.join(foreign)}: a page of another origin may call the API only "
                "with a token; set SECONDBRAIN_API_TOKEN, or list only http://localhost:<port> origins"
            )
        if is_loopback(self.host):
            return self
        if self.api_token is None:
            raise ValueError(
                f"binding {self.host} lets other machines in, so it needs a token: set SECONDBRAIN_API_TOKEN, or "
                "leave SECONDBRAIN_HOST at 127.0.0.1"
            )
        if len(self.api_token.get_secret_value()) < MIN_OPEN_TOKEN_CHARS:
            # Other machines may guess, and nothing slows a guesser down (found by a probe: a token "a" was taken).
            raise ValueError(
                f"binding {self.host} lets other machines try tokens, so SECONDBRAIN_API_TOKEN needs at least "
                f"{MIN_OPEN_TOKEN_CHARS} characters: {TOKEN_HINT}"
            )
        return self

    @property
    def token(self) -> str | None:
        """The API token's value, or None when none is configured."""
        return self.api_token.get_secret_value() if self.api_token else None

    def port_for(self, service: str) -> int:
        ports = {
            "ingest": self.ingest_port,
            "retrieve": self.retrieve_port,
            "chat": self.chat_port,
            "shim": self.shim_port,
            "gateway": self.gateway_port,
        }
        return ports[service]

    def address_of(self, service: str) -> str:
        """host:port where `service` is reached: its configured address, else SECONDBRAIN_HOST and its port."""
        explicit = {"ingest": self.ingest_address, "retrieve": self.retrieve_address, "chat": self.chat_address}
        return explicit.get(service) or f"{self.host}:{self.port_for(service)}"


def _normalised_database_url(url: str) -> str:
    """`user@host:port/database` of a PostgreSQL URL: one server and database however the URL is written (either
    scheme, host case, the default port, libpq's query parameters), the password and connection options left out."""
    parts = urlsplit(url)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    try:
        port = str(parts.port or query.get("port") or 5432)
    except ValueError:  # not one port (libpq's host1:5432,host2:5433, say): the addresses as written
        return f"{parts.username or ''}@{parts.netloc.rpartition('@')[2]}{parts.path}"
    # A socket directory (?host=/run/postgresql) is a path, whose case counts; urlsplit lowercases a hostname.
    host = query.get("host") or parts.hostname or "localhost"
    user = unquote(parts.username or query.get("user", ""))
    database = unquote(parts.path.lstrip("/")) or query.get("dbname") or user
    return f"{user}@{host}:{port}/{database}"


@dataclass(frozen=True)
class Config:
    """Everything a process needs to know, validated."""

    settings: Settings
    vault: VaultConfig


def _env_names() -> dict[str, str]:
    names = {name: f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields}
    names["database_url"] = "DATABASE_URL"
    return names


def load_settings(**overrides: object) -> Settings:
    """Read Settings from the environment; `overrides` (from CLI flags) win over it."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as error:
        raise ConfigError(
            "invalid configuration in the environment:\n" + describe_problems(error, _env_names())
        ) from None


def load_config(**overrides: object) -> Config:
    """Validate the environment, then the vault it names. Raises ConfigError naming the offending key."""
    settings = load_settings(**overrides)
    vault = settings.vault
    if vault is not None and not vault.is_dir():
        raise ConfigError(f"{ENV_PREFIX}VAULT: {vault} is not a directory")
    vault_config = load_vault_config(vault)
    if (named := vault_endpoints(vault_config)) and not settings.allow_vault_providers:
        raise ConfigError(
            f"{vault / VAULT_CONFIG_FILE if vault else VAULT_CONFIG_FILE}: {' and '.join(named)} "
            f"{'names an endpoint' if len(named) == 1 else 'name endpoints'} of the vault's own, which would be "
            "sent questions and passages of your notes; a vault's settings may do "
            f"so only where the operator allows it: set {ENV_PREFIX}ALLOW_VAULT_PROVIDERS=1, or name the URL by a "
            "variable of this machine's instead (base_url_env, a name ending in _BASE_URL)"
        )
    return Config(settings=settings, vault=vault_config)
