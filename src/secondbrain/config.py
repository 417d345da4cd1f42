"""Typed configuration: the process environment plus the vault's `secondbrain.json`.

Two sources, two models. `Settings` is how this install runs (database, ports, data directory) and comes from the
environment. `VaultConfig` is how a vault wants to be read and answered and travels with the vault in
`<vault>/secondbrain.json`. Nothing reads either at import time: `load_config()` is called by an entrypoint.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import parse_qs, unquote, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import platformdirs
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from secondbrain.errors import ConfigError, SecondbrainError, describe_problems
from secondbrain.llm.presets import ProviderOverride
from secondbrain.retrieve.fusion import VECTOR_WEIGHT, FusionKind
from secondbrain.service.auth import is_loopback
from secondbrain.service.client_address import LOOPBACK, networks
from secondbrain.vault_files import read_inside

ENV_PREFIX = "SECONDBRAIN_"
VAULT_CONFIG_FILE = "secondbrain.json"
# A few settings; far more is not a vault's configuration.
VAULT_CONFIG_BYTES = 1024 * 1024

# Default ports: a gRPC port per service, then the REST shim and Envoy (the one address a browser needs).
# A server given port 0 binds any free port.
DEFAULT_PORTS = {"ingest": 50051, "retrieve": 50052, "chat": 50053, "shim": 8081, "gateway": 8080}


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
                "header); `python -c 'import secrets; print(secrets.token_urlsafe(32))'` makes a good one"
            )
        return token

    @model_validator(mode="after")
    def _open_only_with_a_token(self) -> Settings:
        if self.api_token is None and not is_loopback(self.host):
            raise ValueError(
                f"binding {self.host} lets other machines in, so it needs a token: set SECONDBRAIN_API_TOKEN, or "
                "leave SECONDBRAIN_HOST at 127.0.0.1"
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


class _Section(BaseModel):
    # Unknown keys are errors: a typo in secondbrain.json should be reported, not silently ignored.
    model_config = ConfigDict(extra="forbid", frozen=True)


class IngestSection(_Section):
    """`ingest` in secondbrain.json: how the vault is read."""

    ignore: list[str] = Field(default_factory=list, description="Glob patterns of vault paths not to index.")
    max_file_bytes: int = Field(
        default=10 * 1024 * 1024, ge=1, description="Larger notes are skipped and reported, not indexed."
    )


# How the bundled local model runs (`embedding.runtime`): read by the embedder, offered by `secondbrain prepare-model`.
LocalRuntime = Literal["torch", "onnx", "onnx-int8"]


class EmbeddingSection(_Section):
    """`embedding` in secondbrain.json: which model turns chunks into vectors, and optional enrichment."""

    provider: Literal["local", "together", "openai", "ollama"] = "local"
    model: str | None = Field(default=None, description="None takes the provider's default model.")
    batch_size: int = Field(default=32, ge=1, le=2048)
    concurrency: int = Field(default=2, ge=1, le=32, description="Embedding requests in flight at once.")
    runtime: LocalRuntime = Field(
        default="onnx",
        description="How the local model runs (local provider only): onnx, an ONNX Runtime export of the bundled "
        "weights made once at first use (SECONDBRAIN_MODEL_CACHE_DIR), about 2-3x torch's speed with the same vectors; "
        "torch, sentence-transformers on PyTorch, as before; onnx-int8, quantized, faster again, and counted as "
        "another model (switching to or from it re-embeds the index).",
    )
    contextualize: bool = Field(default=False, description="Write one line of LLM context per chunk before embedding.")
    context_provider: str | None = Field(default=None, description="None takes the chat default provider.")
    context_model: str | None = None


class SearchSection(_Section):
    """`search` in secondbrain.json: how text is split into lexemes for keyword search and BM25."""

    text_search_config: str = Field(
        default="english",
        pattern=r"^[a-z_]+$",
        description="A PostgreSQL text search configuration: 'english' stems English; 'simple' suits mixed languages.",
    )


class RerankSection(_Section):
    """`retrieve.reranker`: a Cohere-compatible /v1/rerank endpoint (Together, Cohere and Jina speak it)."""

    provider: Literal["together", "cohere", "jina", "custom"] = "together"
    model: str | None = Field(default=None, description="None takes the provider's default reranker.")
    base_url: str | None = Field(default=None, description="Replaces the provider's URL (required for custom).")
    api_key_env: str | None = Field(default=None, description="Replaces the provider's key variable.")
    candidates: int = Field(default=30, ge=2, le=200, description="Fused candidates sent to the reranker.")
    timeout_seconds: float = Field(default=10.0, gt=0, le=120)


class RetrieveSection(_Section):
    """`retrieve` in secondbrain.json: the defaults of every retrieval knob (a request may override each)."""

    passages: int = Field(default=8, ge=1, le=50, description="Numbered passages per answer.")
    candidates_per_arm: int = Field(default=40, ge=1, le=1000, description="k of each arm before fusion.")
    fusion: FusionKind = Field(
        default="weighted",
        description="How a query's arms are fused: a weighted sum of normalised scores, or reciprocal rank fusion.",
    )
    vector_weight: float = Field(
        default=VECTOR_WEIGHT,
        ge=0,
        le=1,
        description="The vector arm's share of the weighted fusion; lexical has the rest.",
    )
    condense: bool = True
    alternates: bool = True
    condense_provider: str | None = Field(default=None, description="None takes the chat default provider.")
    condense_model: str | None = None
    condense_timeout_seconds: float = Field(default=6.0, gt=0, le=120)
    rerank: bool = False
    reranker: RerankSection = Field(default_factory=RerankSection)
    expand_neighbours: bool = True
    max_chunks_per_note: int = Field(default=4, ge=1, le=50)
    token_budget: int = Field(default=3000, ge=100, le=100_000, description="Tokens of all passages together.")
    wikilink_expansion: bool = Field(default=False, description="Notes linked from top passages join as candidates.")
    read_time: bool = Field(
        default=True, description='A time the question names ("last week") narrows the search to the notes dated then.'
    )
    time_zone: str = Field(
        default="",
        max_length=64,
        description="The asker's time zone (IANA, like Europe/Lisbon) when a client sends no time of its own; empty, "
        "this machine's.",
    )

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        if value.strip():
            try:
                ZoneInfo(value.strip())
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(
                    f"{value!r} is not a time zone this machine knows: use an IANA name, like Europe/Lisbon or UTC"
                ) from None
        return value.strip()


class AgentSection(_Section):
    """`chat.agent`: the limits of an agent-mode turn, after which the model answers from what it gathered."""

    max_steps: int = Field(default=6, ge=1, le=30, description="Model calls that may use tools, per turn.")
    tool_tokens: int = Field(
        default=24_000,
        ge=500,
        le=500_000,
        description="Tokens of all tool results together (and never more than the model's context leaves).",
    )
    result_tokens: int = Field(default=4_000, ge=200, le=100_000, description="Tokens of one tool result.")
    seconds: float = Field(default=120.0, gt=0, le=1800, description="Wall time of the tool loop.")


class ChatSection(_Section):
    """`chat` in secondbrain.json: the default provider, model and system prompt, and provider overrides."""

    default_provider: str | None = None
    default_model: str | None = None
    system_prompt: str | None = None
    mode: Literal["rag", "agent"] = Field(
        default="rag", description="rag: one retrieval, then the answer; agent: the model may also use the note tools."
    )
    agent: AgentSection = Field(default_factory=AgentSection)
    providers: dict[str, ProviderOverride] = Field(
        default_factory=dict, description="Per provider id: models to add or override, base_url, default_model."
    )


class VaultConfig(_Section):
    """A vault's own `secondbrain.json`. Each later part of the system adds its section here."""

    ingest: IngestSection = Field(default_factory=IngestSection)
    embedding: EmbeddingSection = Field(default_factory=EmbeddingSection)
    search: SearchSection = Field(default_factory=SearchSection)
    retrieve: RetrieveSection = Field(default_factory=RetrieveSection)
    chat: ChatSection = Field(default_factory=ChatSection)


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


def load_vault_config(vault: Path | None) -> VaultConfig:
    """Read `<vault>/secondbrain.json`; a vault without one gets the defaults."""
    if vault is None:
        return VaultConfig()
    path = vault / VAULT_CONFIG_FILE
    if not path.is_file():
        return VaultConfig()
    try:
        # Read as a note is: a link out of the vault is not followed (it would quote a file of the server back).
        raw = json.loads(read_inside(vault, VAULT_CONFIG_FILE, VAULT_CONFIG_BYTES).decode("utf-8"))
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON (line {error.lineno}, column {error.colno}): {error.msg}") from None
    except (OSError, UnicodeDecodeError, SecondbrainError) as error:
        raise ConfigError(f"{path}: cannot be read: {error}") from None
    try:
        return VaultConfig.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(f"invalid {path}:\n" + describe_problems(error)) from None


def load_config(**overrides: object) -> Config:
    """Validate the environment, then the vault it names. Raises ConfigError naming the offending key."""
    settings = load_settings(**overrides)
    vault = settings.vault
    if vault is not None and not vault.is_dir():
        raise ConfigError(f"{ENV_PREFIX}VAULT: {vault} is not a directory")
    return Config(settings=settings, vault=load_vault_config(vault))
