"""The one interface to an embedding model.

Ingest embeds chunks with `embed_documents`, retrieve embeds the question with `embed_query`, and both record
`identity` next to the vectors so that a change of model is noticed and every old vector dropped (vectors of two
models are not comparable, even at the same dimension).

What every embedder guarantees, whichever vendor is behind it:

- vectors are float32, L2-normalised (the index uses cosine distance, and some providers return unnormalised
  vectors), one row per input, in input order;
- the family's asymmetric prefixes are applied here (e5's `Instruct: ... Query:`, bge's search instruction,
  nomic's `search_query:`/`search_document:`), so callers pass plain text;
- an input longer than the model reads is cut to its head, counted in `truncated` and logged as a warning, rather
  than silently cut by the encoder or failing a whole batch.

The dimension of a model the table does not know (a remote model named in secondbrain.json, say) is learned, not
configured: `EmbeddingSection` has no dimension field, and a configured number could disagree with what the
provider returns anyway. `ensure_ready()` is the one async initialiser every embedder has: the local embedder
loads its model there, a remote embedder of an unknown model sends one short probe and takes the dimension from
its answer, and for a known remote model it does nothing. Any embedding call learns the dimension too, so only a
caller that needs the dimension *before* embedding anything (to check it against the index, say) has to call it.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextvars import ContextVar
from types import TracebackType
from typing import Self

import numpy as np

from secondbrain.embedding.models import ModelSpec
from secondbrain.embedding.tokens import TokenCounter, counter_for
from secondbrain.errors import FailedPrecondition, InvalidInput

log = logging.getLogger(__name__)
# Whether this task is embedding documents (`embed_documents`) rather than a question: per task, so an ingest run and
# a question on one embedder do not mix.
_EMBEDDING_DOCUMENTS: ContextVar[bool] = ContextVar("embedding_documents", default=False)


class Embedder(ABC):
    """Text to unit vectors with one model. Subclasses implement `_embed` (and usually `ensure_ready`/`aclose`)."""

    def __init__(self, spec: ModelSpec, counter: TokenCounter | None = None) -> None:
        self.spec = spec
        self.provider: str = spec.provider
        self.model: str = spec.name
        self.window: int = spec.window
        self.truncated = 0
        """How many inputs were cut to fit the window since this embedder was made; ingest reports it."""
        self._counter = counter if counter is not None else counter_for(spec.tokenizer)
        self._dimension = spec.dimension

    # -- what the index and the chunker need to know -----------------------------------------------------------

    @property
    def identity(self) -> str:
        """`provider:model`, recorded with the vectors; a different identity means every vector must be redone."""
        return f"{self.provider}:{self.model}"

    @property
    def dimension(self) -> int:
        """The length of every vector. Known up front for the table's models; learned for others (see the module)."""
        if self._dimension is None:
            raise FailedPrecondition(
                f"the dimension of {self.identity} is not known yet: it is not in the model table, so it is learned "
                "from the first vector (await ensure_ready() first)"
            )
        return self._dimension

    @property
    def max_document_tokens(self) -> int:
        """The most `count_tokens` a document may have and still be read whole: the window less the special tokens
        the encoder adds and the document prefix. The chunker should keep chunks within this."""
        return self.window - self.spec.special_tokens - self.count_tokens(self.spec.document_prefix)

    def count_tokens(self, text: str) -> int:
        """Tokens in `text` as this model counts them, special tokens excluded (see `tokens.py` for how exact)."""
        return self._counter.count(text)

    # -- embedding ----------------------------------------------------------------------------------------------

    async def ensure_ready(self) -> None:  # noqa: B027 - a no-op is the right default for a known remote model
        """Do the slow or networked set-up now: load a local model, learn an unknown model's dimension."""

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for `texts`, float32 `(len(texts), dimension)`, with the model's document prefix applied."""
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string; use embed_query for one")
        _check_not_blank(texts)
        if not texts:
            await self.ensure_ready()
            return np.zeros((0, self.dimension), dtype=np.float32)
        embedding_documents = _EMBEDDING_DOCUMENTS.set(True)
        try:
            return self._finish(await self._embed(list(texts), self.spec.document_prefix), len(texts))
        finally:
            _EMBEDDING_DOCUMENTS.reset(embedding_documents)

    async def embed_query(self, text: str) -> np.ndarray:
        """The vector for a question, float32 `(dimension,)`, with the model's query prefix applied."""
        _check_not_blank([text])
        return self._finish(await self._embed([text], self.spec.query_prefix), 1)[0]

    @abstractmethod
    async def _embed(self, texts: list[str], prefix: str) -> np.ndarray:
        """Vectors for `prefix + text` of each text, in order. Cutting over-long texts (keeping the prefix) is the
        subclass's job, because where a text turns out too long differs: locally we count, remotely the provider
        says so."""

    async def aclose(self) -> None:  # noqa: B027 - nothing to release unless a subclass holds a client or a model
        """Release connections or the model."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- shared by subclasses -----------------------------------------------------------------------------------

    def _finish(self, vectors: np.ndarray, expected_rows: int) -> np.ndarray:
        """Check the shape, learn an unknown dimension, and L2-normalise, as float32."""
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != expected_rows:
            raise FailedPrecondition(
                f"{self.identity} returned {matrix.shape[0] if matrix.ndim else 0} vectors for {expected_rows} inputs"
            )
        self._learn_dimension(matrix.shape[1])
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        # A zero vector stays zero rather than becoming NaN; no sane model returns one, and NaN would poison the index.
        return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)

    def _learn_dimension(self, dimension: int) -> None:
        if self._dimension is None:
            log.info("learned embedding dimension", extra={"model": self.identity, "dimension": dimension})
            self._dimension = dimension
        elif dimension != self._dimension:
            raise FailedPrecondition(
                f"{self.identity} returned {dimension}-dimensional vectors, but {self._dimension} were expected"
                " (the model table or the provider's model is not what it seems; check embedding.model)"
            )

    def _note_truncation(self, index: int, tokens: int, kept: int, *, foreseen: bool) -> None:
        """Count and log one cut input; the text itself is never logged (it is someone's private notes). A document
        cut that our own count foresaw (`foreseen`) is logged at INFO: ingest has told whoever syncs which chunks are
        longer than the embedder reads (`NoteIndexer`), and a warning per input repeated that on the terminal of
        `secondbrain up`, across its progress display. A cut query, or one only the provider knew of, is a warning."""
        self.truncated += 1
        reported = foreseen and _EMBEDDING_DOCUMENTS.get()
        log.log(
            logging.INFO if reported else logging.WARNING,
            "embedding input too long for the model; embedded its head only",
            extra={"model": self.identity, "input": index, "tokens": tokens, "kept_tokens": kept},
        )


def _check_not_blank(texts: Sequence[str]) -> None:
    """An empty text has no meaning to embed (and OpenAI rejects it); that is the caller's bug, so say where."""
    for index, text in enumerate(texts):
        if not text.strip():
            raise InvalidInput(f"cannot embed an empty text (input {index})")
