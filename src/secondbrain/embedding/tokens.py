"""Counting and cutting text in an embedding model's tokens, offline.

The chunker sizes chunks with `count`, and an over-long input is cut with `truncate`, so both must agree with each
other and, as closely as we can manage, with the model. Three counters, chosen by the model table:

- `WordPieceCounter`: the bert-base-uncased WordPiece tokenizer, read from the bundled all-MiniLM-L6-v2 files with
  the `tokenizers` library (the Rust tokenizer that transformers itself runs; importing it takes milliseconds, so a
  remote embedder never pulls in torch to count). Exact for every BERT-vocabulary model in the table.
- `Cl100kCounter` with factor 1: OpenAI's tokenizer, exact for OpenAI's embedding models.
- `Cl100kCounter` with `ESTIMATE_FACTOR`: where the model's tokenizer is not on this machine. BERT WordPiece and
  XLM-R SentencePiece split English into roughly 1.0-1.25 times as many pieces as cl100k (more for code and rare
  words), so 1.3 over-counts slightly: chunks come out a little small rather than being cut by the provider. When
  the estimate is still short, the remote embedder's bisect-and-truncate path is the backstop.
"""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING, Protocol

from secondbrain.embedding.models import TokenizerKind
from secondbrain.llm import tokens as llm_tokens

if TYPE_CHECKING:
    import tokenizers

ESTIMATE_FACTOR = 1.3


class TokenCounter(Protocol):
    def count(self, text: str) -> int:
        """Tokens in `text`, without the special tokens the encoder adds around every input."""
        ...

    def truncate(self, text: str, limit: int) -> str:
        """The longest head of `text` that `count` puts at no more than `limit` tokens."""
        ...


@cache
def bert_uncased_tokenizer() -> tokenizers.Tokenizer:
    """The bundled all-MiniLM-L6-v2 tokenizer (bert-base-uncased WordPiece), with padding and truncation off.

    Its tokenizer.json pads and truncates to 128 for the model's training setup; counting needs neither.
    """
    import tokenizers

    from secondbrain.embedding.bundle import model_dir

    tokenizer = tokenizers.Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


class WordPieceCounter:
    """Exact counts for models with the bert-base-uncased vocabulary."""

    def count(self, text: str) -> int:
        return len(bert_uncased_tokenizer().encode(text, add_special_tokens=False).ids)

    def truncate(self, text: str, limit: int) -> str:
        encoding = bert_uncased_tokenizer().encode(text, add_special_tokens=False)
        if len(encoding.ids) <= limit:
            return text
        if limit <= 0:
            return ""
        # Cut at the end of the last kept token, in the original text (offsets are character positions), so the
        # head keeps its case and accents; the model lower-cases it again itself.
        return text[: encoding.offsets[limit - 1][1]]


class Cl100kCounter:
    """cl100k_base counts scaled by `factor`; factor 1 is exact for OpenAI's models."""

    def __init__(self, factor: float = 1.0) -> None:
        self.factor = factor

    def count(self, text: str) -> int:
        return math.ceil(llm_tokens.count_tokens(text) * self.factor)

    def truncate(self, text: str, limit: int) -> str:
        keep = math.floor(limit / self.factor)
        encoding = llm_tokens.encoding()
        tokens = encoding.encode(text, disallowed_special=())
        if math.ceil(len(tokens) * self.factor) <= limit:  # what `count` says, so the two always agree
            return text
        if keep <= 0:
            return ""
        # Byte-level BPE can end a token inside a multi-byte character; drop that partial character rather than
        # decode it to U+FFFD, so the head is always a true prefix of the text.
        return encoding.decode_bytes(tokens[:keep]).decode("utf-8", errors="ignore")


def counter_for(kind: TokenizerKind) -> TokenCounter:
    if kind == "bert-base-uncased":
        return WordPieceCounter()
    if kind == "cl100k":
        return Cl100kCounter()
    return Cl100kCounter(ESTIMATE_FACTOR)
