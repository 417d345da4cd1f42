"""The bundled model run by ONNX Runtime: tokenize as sentence-transformers does, run the exported transformer, mean
pool over the real tokens and L2-normalise, in numpy.

It reads the same files sentence-transformers reads: `tokenizer.json` through the `tokenizers` library (the fast
tokenizer transformers itself wraps; it gives the same ids, checked in the tests), truncated at the model's
`max_seq_length` from `sentence_bert_config.json`. Nothing here imports torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from secondbrain.embedding.onnx_graph import INPUT_NAMES, OUTPUT_NAME

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers


# Padded tokens per run of the model. Measured on the 1,897 Obsidian Help chunks in batches of 32: 2,048 (8 texts of
# the full 256) takes the process's peak memory from 560 MB to 307 MB at the same speed; the attention of 32 full
# texts alone is 100 MB a layer.
TOKENS_PER_RUN = 2048


class OnnxEncoder:
    """Texts to unit vectors with one ONNX Runtime session. `encode` is blocking: call it in a worker thread."""

    def __init__(self, onnx_path: Path, model_dir: Path, threads: int, *, spinning: bool = True) -> None:
        """`spinning=False` puts the runtime's threads to sleep as soon as they run out of work, where by default
        they spin for more (see `LocalEmbedder`'s `serves_queries`)."""
        import onnxruntime
        import tokenizers

        self.path = onnx_path
        self.max_seq_length: int = json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.tokenizer: tokenizers.Tokenizer = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # The file pads and truncates to 128 (the model's training setup); sentence-transformers truncates at
        # max_seq_length, and pads each run to its longest text, which `encode` does itself.
        self.tokenizer.enable_truncation(self.max_seq_length)
        self.tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        # One pass at a time (the embedder's rule), spread over every CPU the process may use; no second pool.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        if not spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # errors only: its warnings about unused initializers are noise in our log
        self.session: onnxruntime.InferenceSession = onnxruntime.InferenceSession(
            str(onnx_path), options, providers=["CPUExecutionProvider"]
        )
        self._dimension = int(self.session.get_outputs()[0].shape[-1])

    def get_embedding_dimension(self) -> int:
        """The vector length (the same name as sentence-transformers', so the embedder checks both alike)."""
        return self._dimension

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit float32 vectors `(len(texts), dimension)` of `texts`, in order.

        The texts are sorted by token length and run in runs of at most `TOKENS_PER_RUN` padded tokens, so a run
        pads little, and a batch of long texts does not hold every layer's attention for all of them at once.
        """
        vectors = np.zeros((len(texts), self._dimension), dtype=np.float32)
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]
        order = sorted(range(len(ids)), key=lambda index: len(ids[index]))
        for run in _runs([len(ids[index]) for index in order], TOKENS_PER_RUN):
            rows = order[run]
            input_ids = np.zeros((len(rows), len(ids[rows[-1]])), dtype=np.int64)  # padded with [PAD], id 0
            attention_mask = np.zeros_like(input_ids)
            for row, index in enumerate(rows):
                input_ids[row, : len(ids[index])] = ids[index]
                attention_mask[row, : len(ids[index])] = 1
            feed = dict(zip(INPUT_NAMES, (input_ids, attention_mask), strict=True))
            [tokens] = self.session.run([OUTPUT_NAME], feed)
            vectors[rows] = mean_pool(tokens, attention_mask)
        return vectors


def _runs(lengths: list[int], budget: int) -> list[slice]:
    """Consecutive slices of ascending `lengths` whose rows times their longest stays within `budget` (a longer
    text than the budget runs alone)."""
    runs = []
    start = 0
    for end in range(1, len(lengths) + 1):
        if end == len(lengths) or (end - start + 1) * lengths[end] > budget:
            runs.append(slice(start, end))
            start = end
    return runs


def mean_pool(tokens: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """The mean of each row's real (unpadded) token embeddings, L2-normalised: sentence-transformers' Pooling
    (mean) and Normalize modules, with their epsilons."""
    mask = attention_mask.astype(np.float32)
    summed = np.einsum("bld,bl->bd", tokens.astype(np.float32, copy=False), mask)
    counts = np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
    means = summed / counts
    norms = np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
    return (means / norms).astype(np.float32, copy=False)
