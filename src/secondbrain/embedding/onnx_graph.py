"""The bundled BERT encoder written out as an ONNX graph from its weights, with onnx's helper API and numpy: no torch.

It is the graph `torch.onnx.export` traced from transformers' BertModel before (kept in the tests as the reference
the vectors are checked against): token ids and attention mask in, the last layer's token embeddings out, with
dynamic batch and sequence axes, and token type ids fixed at zero, as a sentence-transformers model of one text
always has them. Pooling and normalisation stay outside the graph (`onnx_encoder.py`).

The ops are the plain ones the eager PyTorch model runs, in its order, so the float rounding is the same up to the
kernels': Gather for the three embeddings, MatMul plus Add for every linear layer, MatMul/Softmax attention with the
additive mask (0 where a token is real, the float32 minimum where it is padding), LayerNormalization (an ONNX op
since opset 17), and the exact, erf form of GELU that BERT uses. ONNX Runtime fuses these patterns into its own
LayerNorm, Gelu and attention kernels when it loads the file, as it fuses the traced graph's: measured, the two give
the same vectors bit for bit on every chunk of both shared vaults (tests/embedding/test_onnx_graph.py).

The weights are read with `safetensors.numpy` (the safetensors package needs no torch), the architecture from the
model's `config.json`; anything but the absolute-position BERT with GELU this code writes is refused, not guessed at.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx

OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "token_embeddings"
BATCH, SEQUENCE = "batch", "sequence"


@dataclass(frozen=True)
class BertShape:
    """The parts of a BERT `config.json` the graph is built from."""

    hidden_size: int
    heads: int
    layers: int
    intermediate_size: int
    max_positions: int
    layer_norm_eps: float

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.heads

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> BertShape:
        """The shape of the BERT `config` describes; ValueError for a model this graph would not reproduce."""
        unsupported = {
            "model_type": (config.get("model_type"), "bert"),
            "hidden_act": (config.get("hidden_act"), "gelu"),
            "position_embedding_type": (config.get("position_embedding_type", "absolute"), "absolute"),
        }
        for key, (found, wanted) in unsupported.items():
            if found != wanted:
                raise ValueError(f"config.json has {key} {found!r}; the ONNX graph is written for {wanted!r} only")
        if config["hidden_size"] % config["num_attention_heads"]:
            raise ValueError("config.json's hidden_size is not a multiple of num_attention_heads")
        return cls(
            hidden_size=config["hidden_size"],
            heads=config["num_attention_heads"],
            layers=config["num_hidden_layers"],
            intermediate_size=config["intermediate_size"],
            max_positions=config["max_position_embeddings"],
            layer_norm_eps=float(config["layer_norm_eps"]),
        )


def export(model_dir: Path, out: Path) -> None:
    """Write the encoder of the BERT model in `model_dir` (`config.json`, `model.safetensors`) to `out` as ONNX,
    checked by onnx's checker first. Blocking: measured on 2 cores, 1.8 s and a peak of 470 MB for the process (the
    weights are held as numpy arrays, as the graph's initializers and as the serialized file), against 5.4 s and
    780 MB for torch's export (bench/slim_install.py)."""
    import onnx

    model = build(model_dir)
    onnx.checker.check_model(model, full_check=True)
    onnx.save_model(model, str(out))


def build(model_dir: Path) -> onnx.ModelProto:
    """The encoder of the BERT model in `model_dir` as an ONNX model (see the module)."""
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    shape = BertShape.from_config(json.loads((model_dir / "config.json").read_text(encoding="utf-8")))
    weights = load_file(str(model_dir / "model.safetensors"))
    graph = _Graph(weights)
    hidden = graph.embeddings(shape)
    mask = graph.additive_mask()
    for layer in range(shape.layers):
        hidden = graph.layer(f"encoder.layer.{layer}", hidden, mask, shape)
    graph.nodes.append(helper.make_node("Identity", [hidden], [OUTPUT_NAME]))

    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, [BATCH, SEQUENCE]) for name in INPUT_NAMES]
    output = helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [BATCH, SEQUENCE, shape.hidden_size])
    body = helper.make_graph(graph.nodes, "bert_token_embeddings", inputs, [output], graph.initializers)
    model = helper.make_model(body, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="secondbrain")
    # The oldest IR version that carries opset 17, so any onnxruntime that runs the opset loads the file.
    model.ir_version = 8
    return model


class _Graph:
    """The nodes and initializers of the graph being written, with a fresh name for every intermediate value."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        self.weights = weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._constants: set[str] = set()
        self._names = 0

    def op(self, op_type: str, *inputs: str, **attributes: Any) -> str:
        """Append one node and return the name of its single output."""
        from onnx import helper

        self._names += 1
        output = f"{op_type.lower()}_{self._names}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], **attributes))
        return output

    def constant(self, name: str, value: np.ndarray) -> str:
        """An initializer named `name` holding `value`, added once: a name asked for again (each layer's shapes and
        scalars) refers to the first."""
        from onnx import numpy_helper

        if name not in self._constants:
            self._constants.add(name)
            self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def weight(self, name: str) -> str:
        return self.constant(name, self.weights[name])

    def linear(self, prefix: str, x: str) -> str:
        """`x @ W.T + b`, as torch's Linear is exported: the weight stored transposed for MatMul, then the bias."""
        weight = self.constant(f"{prefix}.weight.T", self.weights[f"{prefix}.weight"].T)
        return self.op("Add", self.op("MatMul", x, weight), self.weight(f"{prefix}.bias"))

    def layer_norm(self, prefix: str, x: str, shape: BertShape) -> str:
        scale, bias = self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=shape.layer_norm_eps)

    def embeddings(self, shape: BertShape) -> str:
        """Word plus token type (always type 0) plus position embeddings, then LayerNorm; BertEmbeddings' order.

        All three are looked up with Gather, as the torch export did, though token type 0 and positions
        0..sequence-1 could be a constant row and a slice: the int8 quantizer quantizes the tables a Gather reads, so
        the int8 file then is the one made from torch's export, and an index built under onnx-int8 keeps its vectors.
        """
        from onnx import TensorProto, helper

        ids = INPUT_NAMES[0]
        words = self.op("Gather", self.weight("embeddings.word_embeddings.weight"), ids, axis=0)
        zeros = self.op(
            "ConstantOfShape", self.op("Shape", ids), value=helper.make_tensor("", TensorProto.INT64, [1], [0])
        )
        token_type = self.op("Gather", self.weight("embeddings.token_type_embeddings.weight"), zeros, axis=0)
        # Position ids 0..sequence-1 cut from a row of all of them (a Range there is rewritten by ONNX Runtime's
        # optimizer into a Slice it then cannot run).
        every_position = self.constant("position_ids", np.arange(shape.max_positions, dtype=np.int64)[None, :])
        length = self.op("Shape", ids, start=1, end=2)
        zero = self.constant("zero", np.array([0], dtype=np.int64))
        positions = self.op(
            "Slice", every_position, zero, length, self.constant("axis_1", np.array([1], dtype=np.int64))
        )
        position = self.op("Gather", self.weight("embeddings.position_embeddings.weight"), positions, axis=0)
        summed = self.op("Add", self.op("Add", words, token_type), position)
        return self.layer_norm("embeddings.LayerNorm", summed, shape)

    def additive_mask(self) -> str:
        """`(1 - mask) * float32.min`, shaped (batch, 1, 1, sequence) to broadcast over heads and query positions."""
        from onnx import TensorProto

        mask = self.op("Cast", INPUT_NAMES[1], to=TensorProto.FLOAT)
        inverted = self.op("Sub", self.constant("one", np.array(1.0, dtype=np.float32)), mask)
        lowest = self.constant("float_min", np.array(np.finfo(np.float32).min, dtype=np.float32))
        return self.op(
            "Unsqueeze", self.op("Mul", inverted, lowest), self.constant("axes_1_2", np.array([1, 2], dtype=np.int64))
        )

    def layer(self, prefix: str, hidden: str, mask: str, shape: BertShape) -> str:
        """One transformer layer: self-attention, residual and LayerNorm; GELU feed-forward, residual, LayerNorm."""
        heads = self.constant("heads_shape", np.array([0, 0, shape.heads, shape.head_size], dtype=np.int64))
        merged = self.constant("merged_shape", np.array([0, 0, shape.hidden_size], dtype=np.int64))

        def split(x: str, perm: list[int]) -> str:
            # (batch, sequence, hidden) -> (batch, heads, ...) with the head's axes in `perm`'s order.
            return self.op("Transpose", self.op("Reshape", x, heads), perm=perm)

        attention = f"{prefix}.attention"
        query = split(self.linear(f"{attention}.self.query", hidden), [0, 2, 1, 3])
        key = split(self.linear(f"{attention}.self.key", hidden), [0, 2, 3, 1])  # transposed for the product
        value = split(self.linear(f"{attention}.self.value", hidden), [0, 2, 1, 3])
        scale = self.constant("attention_scale", np.array(1 / math.sqrt(shape.head_size), dtype=np.float32))
        scores = self.op("Add", self.op("Mul", self.op("MatMul", query, key), scale), mask)
        context = self.op("MatMul", self.op("Softmax", scores, axis=-1), value)
        context = self.op("Reshape", self.op("Transpose", context, perm=[0, 2, 1, 3]), merged)
        attended = self.op("Add", self.linear(f"{attention}.output.dense", context), hidden)
        attended = self.layer_norm(f"{attention}.output.LayerNorm", attended, shape)

        inner = self.gelu(self.linear(f"{prefix}.intermediate.dense", attended))
        out = self.op("Add", self.linear(f"{prefix}.output.dense", inner), attended)
        return self.layer_norm(f"{prefix}.output.LayerNorm", out, shape)

    def gelu(self, x: str) -> str:
        """`x * 0.5 * (1 + erf(x / sqrt(2)))`, the exact GELU (opset 17 has no Gelu op; ONNX Runtime fuses this)."""
        root2 = self.constant("sqrt_2", np.array(math.sqrt(2.0), dtype=np.float32))
        one = self.constant("one", np.array(1.0, dtype=np.float32))
        half = self.constant("half", np.array(0.5, dtype=np.float32))
        erf = self.op("Add", self.op("Erf", self.op("Div", x, root2)), one)
        return self.op("Mul", self.op("Mul", x, half), erf)
