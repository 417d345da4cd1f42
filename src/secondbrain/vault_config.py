"""A vault's own configuration: `<vault>/secondbrain.json`, how that vault wants to be read and answered.

It travels with the vault, so it holds no secrets and nothing about this install (that is `config.Settings`, from
the environment). Each part of the system has its section; an unknown or mistyped key is an error naming it. The
file is read as a note is (`vault_files.read_inside`): a link out of the vault is not followed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from secondbrain.errors import ConfigError, SecondbrainError, describe_problems
from secondbrain.ingest.note import MAX_FRONT_MATTER_BYTES
from secondbrain.llm.presets import ProviderOverride
from secondbrain.providers.env_names import KeyVariable, key_for_own_url
from secondbrain.retrieve.fusion import VECTOR_WEIGHT, FusionKind
from secondbrain.vault_files import read_inside

VAULT_CONFIG_FILE = "secondbrain.json"
# A few settings; far more is not a vault's configuration.
VAULT_CONFIG_BYTES = 1024 * 1024


class _Section(BaseModel):
    # Unknown keys are errors: a typo in secondbrain.json should be reported, not silently ignored.
    model_config = ConfigDict(extra="forbid", frozen=True)


class IngestSection(_Section):
    """`ingest` in secondbrain.json: how the vault is read."""

    ignore: list[str] = Field(default_factory=list, description="Glob patterns of vault paths not to index.")
    max_file_bytes: int = Field(
        default=10 * 1024 * 1024, ge=1, description="Larger notes are skipped and reported, not indexed."
    )
    max_chunks_per_note: int = Field(
        default=10_000,
        ge=1,
        description="A note that makes more chunks is skipped and reported, not indexed: each chunk is embedded and "
        "stored, and a note of thousands of one-line sections makes one a line. The default is what 10 MB of prose "
        "makes.",
    )
    max_front_matter_bytes: int = Field(
        default=MAX_FRONT_MATTER_BYTES,
        ge=0,
        le=10 * 1024 * 1024,
        description="A note's front matter (the YAML between its opening '---' lines) over this many bytes is not "
        "read, with a warning in `secondbrain status --files`, and the note's body is indexed: YAML takes about 0.4 s "
        "a megabyte to read, and real front matter is a few hundred bytes.",
    )
    max_attachment_bytes: int = Field(
        default=10 * 1024 * 1024,
        ge=1,
        le=15 * 1024 * 1024,
        description="The largest file (an image, a PDF) the reader is sent from the vault; larger ones are refused. At "
        "most 15 MiB: the file travels in one gRPC message, and a response is at most 16 MiB.",
    )
    attachments: bool = Field(
        default=True,
        description="Index the vault's PDFs, pictures (PNG, JPEG, WebP), canvases and Office files (.docx, .pptx, "
        ".xlsx) beside its notes; false indexes only the notes.",
    )
    ocr: bool = Field(
        default=True,
        description="Read the text of pictures and of PDF pages with no text layer with tesseract, when it is "
        "installed (apt-get install tesseract-ocr tesseract-ocr-eng); about a second a page.",
    )
    max_attachment_file_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1, description="Larger attachments are skipped and reported, not indexed."
    )
    max_attachment_pages: int = Field(
        default=2_000, ge=1, description="A PDF's pages (or a presentation's slides) past this many are not read."
    )
    attachment_seconds: float = Field(
        default=120.0, gt=0, le=3600, description="Reading one attachment taking longer fails it, with that reason."
    )
    attachment_memory_mb: int = Field(
        default=2048,
        ge=256,
        description="The memory the process that reads attachments may hold; a file needing more fails alone.",
    )
    max_picture_pixels: int = Field(
        default=50_000_000, ge=1, description="A picture of more pixels is not read (a header may claim billions)."
    )
    max_canvas_nodes: int = Field(
        default=10_000, ge=1, description="A canvas of more cards and connections is not read."
    )
    max_unzipped_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1,
        description="An Office file that would unpack to more than this (a zip bomb) is not read.",
    )
    max_sheet_cells: int = Field(default=200_000, ge=1, description="A spreadsheet of more cells is not read.")


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
    api_key_env: KeyVariable = Field(
        default=None, description="Replaces the provider's key variable (a name ending in _API_KEY)."
    )
    candidates: int = Field(default=30, ge=2, le=200, description="Fused candidates sent to the reranker.")
    timeout_seconds: float = Field(default=10.0, gt=0, le=120)

    @model_validator(mode="after")
    def _own_key_for_own_url(self) -> RerankSection:
        key_for_own_url(self.base_url, self.api_key_env)
        return self


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


def vault_endpoints(config: VaultConfig) -> list[str]:
    """The keys of `config` that name a URL of the vault's own, to which questions and passages would be sent (a
    chat provider's base_url, the reranker's); a URL named by a variable (base_url_env) is the operator's."""
    named = [f"chat.providers.{pid}.base_url" for pid, p in config.chat.providers.items() if p.base_url is not None]
    if config.retrieve.reranker.base_url is not None:
        named.append("retrieve.reranker.base_url")
    return named


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
