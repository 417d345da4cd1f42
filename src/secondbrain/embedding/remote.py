"""What every remote embedder shares: batching, bounded concurrency, retries, and bisect-and-truncate.

Vendor modules implement one thing, `_request_once`: a single HTTP attempt for a list of inputs that returns the
vectors in order or raises, translating its SDK's failures with `secondbrain.providers.errors` (through
`_status_failure`, so every vendor decides "retry", "too long", "fix your key" the same way). Everything else is
here, once:

- inputs go out in batches of `batch_size`, at most `concurrency` requests in flight (a semaphore held only for
  the request itself, never while sleeping before a retry), and come back in input order whatever order the
  answers arrive in;
- 429, 5xx and network failures are retried with backoff under the shared `RetryPolicy`;
- a batch the provider refuses as too long is split in half and each half retried, down to the single input
  that is too long, which is then cut to its head and sent once more. Bisecting finds the culprit in log2(batch)
  rounds instead of failing (or re-sending one by one) a whole batch of good chunks. The cut is counted in
  `truncated` and logged.
"""

from __future__ import annotations

import asyncio
import math
import re
from abc import abstractmethod
from collections.abc import Awaitable, Mapping, Sequence
from typing import TypedDict, TypeVar, Unpack

import numpy as np

from secondbrain.embedding.base import Embedder
from secondbrain.embedding.models import ModelSpec
from secondbrain.errors import InvalidInput, Unavailable
from secondbrain.providers import ProviderContext, RetryPolicy, call_with_retries, status_error

T = TypeVar("T")

# Seconds for one embedding request: a batch of 32 chunks takes well under a second; a stuck one must not hang
# an ingest run.
REQUEST_TIMEOUT_SECONDS = 60.0

# How providers word "this input is longer than the model reads": OpenAI ("maximum context length"), Together
# and text-embeddings-inference ("must have less than 512 tokens", "too long"), Ollama with truncate=false
# ("the input length exceeds the context length").
_TOO_LONG = re.compile(
    r"maximum context length|context length|too long|too many tokens|must have less than \d+ tokens"
    r"|exceed\w* (?:the )?(?:max\w* )?(?:input |context |token |sequence )?(?:length|tokens?|limit)",
    re.IGNORECASE,
)
# OpenAI says how far over an input is; cutting by that ratio works even when our token count is an estimate.
_LIMIT_AND_ASKED = re.compile(r"maximum context length is (\d+) tokens?, however you requested (\d+)", re.IGNORECASE)
# Keep a margin under the provider's own limit when cutting by its ratio: tokenizers disagree at the edges.
_RATIO_MARGIN = 0.9


class InputTooLong(Exception):
    """The provider refused a request because an input is longer than the model reads (not retryable as is)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def is_length_error(status: int, message: str) -> bool:
    return status == 413 or (status == 400 and _TOO_LONG.search(message) is not None)


class BatchOptions(TypedDict, total=False):
    """How a remote embedder sends its inputs; what is left out takes RemoteEmbedder's default."""

    batch_size: int
    concurrency: int
    retry: RetryPolicy | None


class RemoteEmbedder(Embedder):
    def __init__(self, spec: ModelSpec, context: ProviderContext, **options: Unpack[BatchOptions]) -> None:
        super().__init__(spec)
        self.context = context
        self.batch_size = options.get("batch_size", 32)
        self.retry = options.get("retry") or RetryPolicy()
        self._slots = asyncio.Semaphore(options.get("concurrency", 2))
        self._probe_lock = asyncio.Lock()

    @abstractmethod
    async def _request_once(self, inputs: list[str]) -> Sequence[Sequence[float]]:
        """One HTTP attempt. Raise RetryableFailure for what may pass, InputTooLong for a length refusal, a
        SecondbrainError for what will not pass."""

    # -- translating failures, the same for every vendor --------------------------------------------------------

    def _status_failure(self, status: int, message: str, headers: Mapping[str, str]) -> Exception:
        if is_length_error(status, message):
            return InputTooLong(message)
        return status_error(self.context, status, message, self.model, headers)

    def _malformed(self, what: str) -> Unavailable:
        return Unavailable(f"{self.context.display_name} sent an embeddings answer that cannot be read: {what}")

    # -- the pipeline -------------------------------------------------------------------------------------------

    async def ensure_ready(self) -> None:
        """Learn an unknown model's dimension with one short probe; nothing to do for a known model."""
        if self._dimension is not None:
            return
        async with self._probe_lock:
            if self._dimension is None:
                self._finish(await self._embed(["dimension probe"], self.spec.document_prefix), 1)

    async def _embed(self, texts: list[str], prefix: str) -> np.ndarray:
        batches = [
            self._embed_batch(texts[start : start + self.batch_size], prefix, start)
            for start in range(0, len(texts), self.batch_size)
        ]
        rows = await _in_order(batches)
        return np.asarray([row for batch in rows for row in batch], dtype=np.float32)

    async def _embed_batch(self, texts: list[str], prefix: str, offset: int) -> list[Sequence[float]]:
        """Vectors for one batch; `offset` is the position of its first text in the caller's input, for logs."""
        try:
            return await self._send([prefix + text for text in texts])
        except InputTooLong as refusal:
            if len(texts) > 1:
                middle = len(texts) // 2
                left, right = await _in_order(
                    [
                        self._embed_batch(texts[:middle], prefix, offset),
                        self._embed_batch(texts[middle:], prefix, offset + middle),
                    ]
                )
                return left + right
            return await self._embed_truncated(texts[0], prefix, offset, refusal.message)

    async def _embed_truncated(self, text: str, prefix: str, index: int, refusal: str) -> list[Sequence[float]]:
        """Cut the one over-long text to its head (the prefix is kept whole) and send it once more."""
        tokens = self.count_tokens(text)
        kept = self._truncation_target(tokens, prefix, refusal)
        if kept < 1:
            raise InvalidInput(
                f"input {index} is too long for {self.identity} and cannot be cut to fit ({tokens} tokens)"
            )
        head = self._counter.truncate(text, kept)
        self._note_truncation(index, tokens, kept, foreseen=tokens > self.max_document_tokens)
        try:
            return await self._send([prefix + head])
        except InputTooLong:
            raise InvalidInput(
                f"input {index} is too long for {self.identity} even after cutting it from {tokens} to {kept} tokens"
            ) from None

    def _truncation_target(self, tokens: int, prefix: str, refusal: str) -> int:
        """How many tokens of an over-long text to keep: within our window (less the special tokens and the
        prefix it travels with), within the share of the input the provider says it would accept, and in any case
        fewer than now (the provider just refused this many)."""
        limits = [self.window - self.spec.special_tokens - self.count_tokens(prefix)]
        if match := _LIMIT_AND_ASKED.search(refusal):
            allowed, asked = int(match[1]), int(match[2])
            if asked > 0:
                limits.append(math.floor(tokens * allowed / asked * _RATIO_MARGIN))
        target = min(limits)
        return target if target < tokens else tokens // 2

    async def _send(self, inputs: list[str]) -> list[Sequence[float]]:
        """One request, retried under the policy; the semaphore is held for each attempt, not for the waits."""

        async def attempt() -> list[Sequence[float]]:
            async with self._slots:
                vectors = list(await self._request_once(inputs))
            if len(vectors) != len(inputs):
                raise self._malformed(f"{len(vectors)} vectors for {len(inputs)} inputs")
            dimensions = {len(vector) for vector in vectors}
            if len(dimensions) != 1:
                raise self._malformed(f"vectors of different lengths ({sorted(dimensions)}) in one answer")
            # Checked per answer, before rows of many answers are stacked into one matrix.
            self._learn_dimension(dimensions.pop())
            return vectors

        return await call_with_retries(attempt, self.retry, f"{self.context.display_name} embeddings")


async def _in_order(calls: Sequence[Awaitable[T]]) -> list[T]:
    """Run `calls` concurrently and return their results in the order given.

    A TaskGroup rather than `gather`, so that when one batch fails for good the others are cancelled instead of
    running on (and spending) after the caller has its error. The first failure is raised as itself, not wrapped
    in an ExceptionGroup: callers catch domain errors.
    """
    if len(calls) == 1:
        return [await calls[0]]
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_awaited(call)) for call in calls]
    except BaseExceptionGroup as failures:
        raise _first_leaf(failures) from None
    return [task.result() for task in tasks]


async def _awaited(call: Awaitable[T]) -> T:
    return await call


def _first_leaf(group: BaseExceptionGroup) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first
