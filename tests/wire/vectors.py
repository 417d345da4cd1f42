"""Deterministic stand-ins for a model's numbers: embeddings, token counts and relevance scores.

Tests need vectors that behave like real ones where it matters (texts that share words are near, unrelated texts are
far, the same text always gives the same vector) without a model. A hashed bag of words does that: each lower-cased
word adds one to a bucket chosen by a stable hash (not `hash()`, which changes per process), and the result is
L2-normalised. Values are rounded to float32, so the float and base64 encodings of a vector are the same numbers.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from array import array

DEFAULT_DIMENSIONS = 384

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def count_tokens(text: str) -> int:
    """A model-free token count: whitespace-separated words."""
    return len(text.split())


def embed(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """A unit vector for `text`; a text with no words hashes whole, so every input gets a usable (non-zero) vector."""
    buckets = [0.0] * dimensions
    for word in words(text) or [text]:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        buckets[int.from_bytes(digest, "little") % dimensions] += 1.0
    norm = math.sqrt(sum(value * value for value in buckets))
    return array("f", (value / norm for value in buckets)).tolist()


def to_base64(vector: list[float]) -> str:
    """OpenAI's `encoding_format: "base64"`: the little-endian float32 bytes, base64-encoded."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


def overlap(query: str, document: str) -> float:
    """The share of the query's distinct words that the document contains, in [0, 1]."""
    wanted = set(words(query))
    if not wanted:
        return 0.0
    return len(wanted & set(words(document))) / len(wanted)
