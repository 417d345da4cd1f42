"""The model table and token counting: the numbers the chunker and the index are sized from."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from secondbrain.embedding import create_embedder, lookup
from secondbrain.embedding.tokens import ESTIMATE_FACTOR, Cl100kCounter, TokenCounter, WordPieceCounter
from secondbrain.errors import ConfigError
from secondbrain.llm import tokens as llm_tokens
from secondbrain.vault_config import EmbeddingSection

KEYS = {"TOGETHER_API_KEY": "sk-together-test-key", "OPENAI_API_KEY": "sk-openai-test-key"}


@pytest.mark.parametrize(
    ("provider", "model", "dimension", "window"),
    [
        ("local", "sentence-transformers/all-MiniLM-L6-v2", 384, 256),
        ("together", "intfloat/multilingual-e5-large-instruct", 1024, 512),
        ("openai", "text-embedding-3-small", 1536, 8191),
        ("ollama", "nomic-embed-text", 768, 2048),
    ],
)
def test_each_provider_has_a_default_model_with_known_shape(
    provider: str, model: str, dimension: int, window: int
) -> None:
    embedder = create_embedder(EmbeddingSection(provider=provider), KEYS)  # type: ignore[arg-type]
    assert (embedder.model, embedder.dimension, embedder.window) == (model, dimension, window)
    assert embedder.identity == f"{provider}:{model}"


def test_other_known_models() -> None:
    assert lookup("openai", "text-embedding-3-large").dimension == 3072
    bge = lookup("together", "BAAI/bge-large-en-v1.5")
    assert (bge.dimension, bge.window, bge.document_prefix) == (1024, 512, "")
    mxbai = lookup("ollama", "mxbai-embed-large")
    assert (mxbai.dimension, mxbai.window) == (1024, 512)
    assert mxbai.query_prefix == "Represent this sentence for searching relevant passages: "


def test_the_local_model_answers_to_its_short_name_and_nothing_else() -> None:
    assert lookup("local", "all-MiniLM-L6-v2").name == "sentence-transformers/all-MiniLM-L6-v2"
    with pytest.raises(ConfigError, match=r"embedding\.model: 'BAAI/bge-small-en-v1.5' is not available"):
        create_embedder(EmbeddingSection(provider="local", model="BAAI/bge-small-en-v1.5"))


def test_an_ollama_tag_keeps_its_name_and_takes_its_family_shape() -> None:
    spec = lookup("ollama", "mxbai-embed-large:335m")
    assert spec.name == "mxbai-embed-large:335m"
    assert (spec.dimension, spec.window) == (1024, 512)


def test_an_unknown_remote_model_has_no_dimension_yet_and_a_conservative_window() -> None:
    spec = lookup("together", "acme/notes-embed-v9")
    assert spec.dimension is None
    assert spec.window == 512
    assert (spec.query_prefix, spec.document_prefix) == ("", "")


def test_counts_use_the_models_tokenizer_or_a_stated_estimate() -> None:
    text = "Chunking notes by heading keeps each passage self-contained."
    cl100k = llm_tokens.count_tokens(text)
    openai = create_embedder(EmbeddingSection(provider="openai"), KEYS)
    e5 = create_embedder(EmbeddingSection(provider="together"), KEYS)
    bge = create_embedder(EmbeddingSection(provider="together", model="BAAI/bge-large-en-v1.5"), KEYS)
    assert openai.count_tokens(text) == cl100k
    assert e5.count_tokens(text) == math.ceil(cl100k * ESTIMATE_FACTOR)
    assert bge.count_tokens(text) == WordPieceCounter().count(text)
    assert bge.count_tokens("Hello, world") == 3


def test_the_document_budget_leaves_room_for_special_tokens_and_the_prefix() -> None:
    nomic = create_embedder(EmbeddingSection(provider="ollama"), {})
    assert nomic.max_document_tokens == 2048 - 2 - nomic.count_tokens("search_document: ")
    openai = create_embedder(EmbeddingSection(provider="openai"), KEYS)
    assert openai.max_document_tokens == 8191


COUNTERS: list[TokenCounter] = [WordPieceCounter(), Cl100kCounter(), Cl100kCounter(ESTIMATE_FACTOR)]


@pytest.mark.parametrize("counter", COUNTERS, ids=["wordpiece", "cl100k", "estimate"])
@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=200), limit=st.integers(min_value=0, max_value=60))
def test_truncate_keeps_a_head_that_fits(counter: TokenCounter, text: str, limit: int) -> None:
    head = counter.truncate(text, limit)
    assert text.startswith(head)
    assert counter.count(head) <= limit
    if counter.count(text) <= limit:
        assert head == text
