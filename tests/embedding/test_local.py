"""The local embedder with the real bundled model: offline, lazy, 384-d unit vectors that put meaning together, and
token counts that agree with the tokenizer the model itself encodes with."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from secondbrain.embedding.local import LocalEmbedder
from secondbrain.errors import InvalidInput
from tests.embedding.conftest import MIXED_TEXTS, LocalLoad

TEXTS = [
    *MIXED_TEXTS,
    "",
    "   \t\n",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
]


def model_tokens(embedder: LocalEmbedder, text: str) -> int:
    return len(embedder.encoder.tokenizer(text, add_special_tokens=False)["input_ids"])


def test_the_model_loads_from_the_bundle_without_touching_the_network(local_load: LocalLoad) -> None:
    assert local_load.embedder.loaded
    assert local_load.network_attempts == []
    assert local_load.switches_after_load == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    assert local_load.embedder.load_seconds is not None


def test_shape_window_and_identity_match_the_model(local_embedder: LocalEmbedder) -> None:
    assert local_embedder.identity == "local:sentence-transformers/all-MiniLM-L6-v2"
    assert local_embedder.dimension == 384 == local_embedder.encoder.get_embedding_dimension()
    assert local_embedder.window == 256 == local_embedder.encoder.max_seq_length
    # [CLS] and [SEP] take two of the 256 positions.
    assert local_embedder.max_document_tokens == 254


async def test_documents_are_unit_float32_rows_in_input_order(local_embedder: LocalEmbedder) -> None:
    texts = [f"note {i}: " + TEXTS[i % 5] for i in range(20)]  # more than one batch of 16
    vectors = await local_embedder.embed_documents(texts)
    assert vectors.shape == (20, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Row i is text i's vector: embedding a text alone gives the same row.
    for index in (0, 7, 19):
        alone = await local_embedder.embed_query(texts[index])
        assert alone.shape == (384,)
        np.testing.assert_allclose(alone, vectors[index], atol=1e-5)


async def test_similar_meanings_are_closer_than_unrelated_ones(local_embedder: LocalEmbedder) -> None:
    question = await local_embedder.embed_query("How do I reset my router's admin password?")
    notes = await local_embedder.embed_documents(
        [
            "Steps to change the Wi-Fi router login password after a factory reset.",
            "Grandma's banana bread: three ripe bananas, flour, butter, bake for an hour.",
        ]
    )
    related, unrelated = notes @ question
    assert related > unrelated + 0.3


@pytest.mark.parametrize("text", TEXTS)
def test_count_tokens_matches_the_model_tokenizer(local_embedder: LocalEmbedder, text: str) -> None:
    assert local_embedder.count_tokens(text) == model_tokens(local_embedder, text)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_count_tokens_matches_the_model_tokenizer_for_any_text(local_load: LocalLoad, text: str) -> None:
    embedder = local_load.embedder
    assert embedder.count_tokens(text) == model_tokens(embedder, text)


async def test_an_over_long_document_is_embedded_and_its_truncation_counted(
    local_embedder: LocalEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    long_note = " ".join(["storage decision"] * 200)  # 400 tokens, more than the model reads
    assert local_embedder.count_tokens(long_note) > local_embedder.max_document_tokens
    vectors = await local_embedder.embed_documents(["a short note", long_note])
    assert vectors.shape == (2, 384)
    assert local_embedder.truncated == 1
    [cut] = [record for record in caplog.records if "embedded its head only" in record.getMessage()]
    assert cut.input == 1  # type: ignore[attr-defined]
    # The count is the model's own tokenizer's, so ingest has reported the chunk already: not a second warning.
    assert cut.levelname == "INFO"
    assert "storage decision" not in cut.getMessage()  # the note's text is never logged
    # A question cut to the window is nobody's report but this one: a warning.
    caplog.clear()
    await local_embedder.embed_query(long_note)
    [cut] = [record for record in caplog.records if "embedded its head only" in record.getMessage()]
    assert cut.levelname == "WARNING"


async def test_empty_input_gives_an_empty_matrix_and_blank_text_is_refused(local_embedder: LocalEmbedder) -> None:
    assert (await local_embedder.embed_documents([])).shape == (0, 384)
    with pytest.raises(InvalidInput, match="input 1"):
        await local_embedder.embed_documents(["fine", "  "])


QUESTIONS = [f"question {i}: where did we decide on {TEXTS[i % 5][:30]}?" for i in range(12)]


class Passes:
    """Counts the model's passes and how many texts each had; each pass can be held until released."""

    def __init__(self, encode: Callable[..., np.ndarray]) -> None:
        self.encode = encode
        self.sizes: list[int] = []
        self.release = threading.Event()
        self.release.set()
        self.failure: Exception | None = None
        self.poison = ""  # a text the model fails on, whatever else is in its pass

    def __call__(self, texts: list[str], **options: object) -> np.ndarray:
        self.sizes.append(len(texts))
        self.release.wait(10)
        if self.failure is not None:
            raise self.failure
        if self.poison in texts:
            raise ValueError("the model cannot read this text")
        return self.encode(texts, **options)


@pytest.fixture
def passes(local_embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> Passes:
    model = local_embedder.encoder
    spy = Passes(model.encode)
    monkeypatch.setattr(model, "encode", spy)
    return spy


async def test_questions_asked_together_share_the_models_passes(local_embedder: LocalEmbedder, passes: Passes) -> None:
    alone = [await local_embedder.embed_query(question) for question in QUESTIONS]
    assert passes.sizes == [1] * len(QUESTIONS)
    passes.sizes.clear()
    together = await asyncio.gather(*(local_embedder.embed_query(question) for question in QUESTIONS))
    # All were asked before the model started: one pass (a batch holds 16).
    assert passes.sizes == [len(QUESTIONS)]
    for one, shared in zip(alone, together, strict=True):
        np.testing.assert_allclose(shared, one, atol=1e-5)


async def test_a_question_given_up_on_is_not_encoded_and_the_others_are(
    local_embedder: LocalEmbedder, passes: Passes
) -> None:
    passes.release.clear()  # hold the first pass, so the others wait behind it
    first = asyncio.create_task(local_embedder.embed_query(QUESTIONS[0]))
    await asyncio.sleep(0.05)
    abandoned = asyncio.create_task(local_embedder.embed_query(QUESTIONS[1]))
    kept = asyncio.create_task(local_embedder.embed_query(QUESTIONS[2]))
    await asyncio.sleep(0.05)
    abandoned.cancel()
    passes.release.set()
    assert (await first).shape == (await kept).shape == (384,)
    assert passes.sizes == [1, 1], "the abandoned question was dropped from the second pass"


async def test_a_failed_pass_fails_its_callers_and_the_next_pass_runs(
    local_embedder: LocalEmbedder, passes: Passes
) -> None:
    passes.failure = RuntimeError("out of memory")
    with pytest.raises(RuntimeError, match="out of memory"):
        await local_embedder.embed_query(QUESTIONS[0])
    passes.failure = None
    assert (await local_embedder.embed_query(QUESTIONS[0])).shape == (384,)


async def test_a_text_the_model_fails_on_fails_only_its_own_caller(
    local_embedder: LocalEmbedder, passes: Passes
) -> None:
    passes.poison = QUESTIONS[1]
    results = await asyncio.gather(*(local_embedder.embed_query(q) for q in QUESTIONS[:3]), return_exceptions=True)
    assert isinstance(results[1], ValueError)
    assert results[0].shape == results[2].shape == (384,)  # type: ignore[union-attr]
    assert passes.sizes == [3, 1, 1, 1], "the shared pass failed, so each went again alone"


async def test_callers_are_not_left_waiting_when_the_encoding_task_is_cancelled(
    local_embedder: LocalEmbedder, passes: Passes
) -> None:
    passes.release.clear()
    asked = asyncio.create_task(local_embedder.embed_query(QUESTIONS[0]))
    await asyncio.sleep(0.05)
    assert local_embedder._encoding is not None
    local_embedder._encoding.cancel()  # as when its event loop shuts down
    passes.release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(asked, timeout=5)
    assert (await local_embedder.embed_query(QUESTIONS[0])).shape == (384,), "the next call starts a new pass"


def test_importing_and_creating_the_embedder_loads_no_model() -> None:
    """Importing torch takes seconds; a service that never embeds, or counts tokens only, must not pay for it."""
    code = (
        "import sys\n"
        "from secondbrain.vault_config import EmbeddingSection\n"
        "from secondbrain.embedding import create_embedder\n"
        "embedder = create_embedder(EmbeddingSection(provider='local'))\n"
        "assert embedder.count_tokens('hello world') == 2\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"
