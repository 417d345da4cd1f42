"""Embedders: text to vectors, behind one interface, chosen by configuration.

`create_embedder(config.vault.embedding)` gives an `Embedder`; see `base.py` for what every embedder guarantees and
`models.json` for the models it knows.
"""

from secondbrain.embedding.base import Embedder
from secondbrain.embedding.factory import create_embedder
from secondbrain.embedding.models import ModelSpec, lookup

__all__ = ["Embedder", "ModelSpec", "create_embedder", "lookup"]
