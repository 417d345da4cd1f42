"""The local embedder's `torch` runtime: sentence-transformers on PyTorch, an optional extra.

A plain install has neither (the `onnx` runtimes, the default, need neither; see `onnx_graph.py`), so choosing
`embedding.runtime: torch` without them is refused when the embedder is made, at a service's or command's start,
naming the extra to install, rather than failing with an ImportError on the first text to embed.
"""

from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING

from secondbrain.errors import ConfigError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

EXTRA = "secondbrain[torch]"
MODULES = ("torch", "sentence_transformers")


def missing_modules() -> list[str]:
    """The modules of the torch runtime that are not installed (found without importing them: milliseconds)."""
    return [name for name in MODULES if importlib.util.find_spec(name) is None]


def require_installed() -> None:
    """Raise ConfigError, naming the extra, when the torch runtime's packages are not installed."""
    if missing := missing_modules():
        raise ConfigError(
            f"embedding.runtime is 'torch', but {' and '.join(missing)} is not installed: install it with "
            f"`pip install '{EXTRA}'`, or set embedding.runtime to 'onnx' (the default, which needs no torch)"
        )


def offline_hub() -> None:
    """Set the hub's offline switches before transformers is imported (it reads them at import), and turn its
    progress bars off (noise in a JSON log)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()


def load_model(threads: int) -> SentenceTransformer:
    """Load the bundled model from disk, on `threads` of torch's intra-op pool. Blocking (seconds): call it in a
    worker thread.

    The hub's offline switches are set before the libraries are imported (they read them at import), and the
    model is loaded from its directory with `local_files_only`, so no code path can reach for the network.
    """
    from secondbrain.embedding.bundle import model_dir

    offline_hub()
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    return SentenceTransformer(str(model_dir()), device="cpu", local_files_only=True)
