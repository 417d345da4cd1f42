"""The model table (`models.json`): what we know about each embedding model before we ever call it.

Per provider: its default model, how its OpenAI-compatible endpoint should encode vectors, what to assume for a
model the table does not list, and per known model its dimension, window (the most tokens the encoder reads,
special tokens included, as the model card states it), how many special tokens it adds, which tokenizer counts its
tokens, and the asymmetric prefixes its family was trained with.

`tokenizer` is one of:

- `bert-base-uncased`: the WordPiece vocabulary of BERT-base uncased. all-MiniLM-L6-v2, bge-*-en-v1.5,
  nomic-embed-text and mxbai-embed-large all use it, and the bundled all-MiniLM-L6-v2 ships it, so those counts are
  exact without a download.
- `cl100k`: OpenAI's own tokenizer for its embedding models (exact).
- `estimate`: the real tokenizer is not on this machine (e5's XLM-R SentencePiece, anything unknown), so cl100k
  times a safety factor stands in; see `tokens.py`.

The table is data, not code, so adding a model is a JSON edit; pydantic validates it when first read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from secondbrain.errors import ConfigError

Provider = Literal["local", "together", "openai", "ollama"]
TokenizerKind = Literal["bert-base-uncased", "cl100k", "estimate"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Shape(_Strict):
    window: int = Field(ge=1)
    special_tokens: int = Field(ge=0)
    tokenizer: TokenizerKind


class _ModelEntry(_Shape):
    dimension: int = Field(ge=1)
    aliases: list[str] = Field(default_factory=list)
    query_prefix: str = ""
    document_prefix: str = ""


class _ProviderEntry(_Strict):
    default_model: str
    encoding_format: Literal["float", "base64"] = "float"
    # None: the provider serves only the listed models (the local one ships exactly one).
    unknown_model: _Shape | None = None
    models: dict[str, _ModelEntry]


@dataclass(frozen=True)
class ModelSpec:
    """One embedding model as an embedder needs it.

    `dimension` is None only for a model the table does not know; the embedder learns it from the first vector.
    """

    provider: Provider
    name: str
    dimension: int | None
    window: int
    special_tokens: int
    tokenizer: TokenizerKind
    query_prefix: str = ""
    document_prefix: str = ""
    encoding_format: Literal["float", "base64"] = "float"

    @property
    def known(self) -> bool:
        return self.dimension is not None


@cache
def _table() -> dict[str, _ProviderEntry]:
    raw = json.loads(resources.files(__package__).joinpath("models.json").read_text(encoding="utf-8"))
    return {provider: _ProviderEntry.model_validate(entry) for provider, entry in raw.items()}


def _canonical(provider: Provider, name: str) -> str:
    """The table's spelling of `name`: aliases resolved; for Ollama, `:latest` dropped (it is the same model)."""
    if provider == "ollama" and name.endswith(":latest"):
        name = name.removesuffix(":latest")
    for known, entry in _table()[provider].models.items():
        if name == known or name in entry.aliases:
            return known
    return name


def lookup(provider: Provider, model: str | None) -> ModelSpec:
    """The spec for `model` of `provider` (None: the provider's default).

    An Ollama tag (`nomic-embed-text:v1.5`) is the same family as its base name, so it takes the base name's
    dimension, window and prefixes; the tag itself is kept, because the tag is what Ollama serves.
    A remote model the table does not list gets the provider's `unknown_model` shape, no prefixes, and no
    dimension. The local provider has only its bundled model, so any other name is a configuration error.
    """
    entry = _table()[provider]
    name = _canonical(provider, model or entry.default_model)
    family = name.split(":", 1)[0] if provider == "ollama" else name
    known = entry.models.get(name) or entry.models.get(family)
    shape = known if known is not None else entry.unknown_model
    if shape is None:
        choices = ", ".join(entry.models)
        raise ConfigError(
            f"secondbrain.json: embedding.model: {name!r} is not available for the {provider} provider; "
            f"it ships only {choices} (choose another provider for other models)"
        )
    return ModelSpec(
        provider=provider,
        name=name,
        dimension=known.dimension if known is not None else None,
        window=shape.window,
        special_tokens=shape.special_tokens,
        tokenizer=shape.tokenizer,
        query_prefix=known.query_prefix if known is not None else "",
        document_prefix=known.document_prefix if known is not None else "",
        encoding_format=entry.encoding_format,
    )
