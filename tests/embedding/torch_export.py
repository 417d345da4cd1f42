"""The reference export the torch-free graph (`onnx_graph.py`) is held to: the one the runtime made before issue 35,
`torch.onnx.export` tracing transformers' BertModel. Test-only: it needs the dev extra (torch, transformers)."""

from __future__ import annotations

import warnings
from pathlib import Path

from secondbrain.embedding.local import cpu_threads
from secondbrain.embedding.onnx_graph import INPUT_NAMES, OPSET, OUTPUT_NAME
from secondbrain.embedding.torch_runtime import offline_hub


def export_with_torch(model_dir: Path, out: Path) -> None:
    """Export the transformer of the model in `model_dir` (token ids and mask in, token embeddings out) to `out`
    with torch, dynamic batch and sequence axes, exactly as `export_fp32` did before (seconds, about 500 MB)."""
    offline_hub()
    import torch
    from transformers import AutoModel

    torch.set_num_threads(cpu_threads())
    # Eager attention: plain MatMul/Softmax ops; the SDPA path traces a data-dependent branch (is_causal).
    bert = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()

    class TokenEmbeddings(torch.nn.Module):
        """BERT with token type ids fixed at zero, as a sentence-transformers model of one text always has them."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            token_type_ids = torch.zeros_like(input_ids)
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    # Two rows, the second padded: the trace then goes through the masking a padded batch needs.
    input_ids = torch.full((2, 8), 1000, dtype=torch.int64)
    attention_mask = torch.ones((2, 8), dtype=torch.int64)
    attention_mask[1, 5:] = 0
    axes = {0: "batch", 1: "sequence"}
    with warnings.catch_warnings(), torch.no_grad():
        # The TorchScript exporter warns that it is the legacy one and about tracing Python branches.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            TokenEmbeddings(),
            (input_ids, attention_mask),
            str(out),
            input_names=list(INPUT_NAMES),
            output_names=[OUTPUT_NAME],
            dynamic_axes={name: axes for name in (*INPUT_NAMES, OUTPUT_NAME)},
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
