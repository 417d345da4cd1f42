"""The provider that needs no model: it quotes the sentences of the passages that best match the question.

Always available, so a fresh install with no API key still answers, with citations. It says plainly that it is
quoting, not reasoning. Sentences are scored by the question words they contain, each word weighted by how rare it
is among the candidate sentences (an IDF), so "the" counts for nothing and a name counts for a lot.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from importlib import resources

from secondbrain.llm.base import ChatProvider
from secondbrain.llm.tokens import count_tokens
from secondbrain.llm.types import ChatRequest, SourcePassage, StreamEvent, TextDelta, Usage
from secondbrain.providers import ProviderContext

MAX_QUOTES = 3
MAX_QUOTES_PER_PASSAGE = 2
MAX_QUOTE_CHARS = 400

PREAMBLE = "No language model is configured, so I am quoting your notes rather than reasoning about them."

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_STOPWORDS = frozenset(
    line
    for line in (resources.files("secondbrain.llm") / "stopwords.txt").read_text(encoding="utf-8").splitlines()
    if line and not line.startswith("#")
)


def _stem(word: str) -> str:
    # A light suffix strip, enough for "decided"/"decision" not to matter less than "decide"/"decides".
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    return {_stem(word) for word in (w.lower() for w in _WORD.findall(text)) if word not in _STOPWORDS}


@dataclass(frozen=True)
class _Sentence:
    text: str
    number: int
    order: int
    terms: frozenset[str]


def _sentences(passage: SourcePassage, start: int) -> list[_Sentence]:
    found = []
    for block in re.split(r"\n\s*\n", passage.text):
        block = block.strip()
        # Heading lines and the "Title > Heading" prefix of a chunk are labels, not statements to quote.
        if not block or block.startswith("#") or (" > " in block and "\n" not in block and not block.endswith(".")):
            continue
        for line in block.splitlines():
            line = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", line).strip()
            for piece in _SENTENCE_END.split(line):
                piece = piece.strip()
                if len(_WORD.findall(piece)) >= 3:
                    found.append(_Sentence(piece, passage.number, start + len(found), frozenset(terms(piece))))
    return found


def best_sentences(question: str, passages: list[SourcePassage]) -> list[_Sentence]:
    """The sentences to quote, best first."""
    wanted = terms(question)
    candidates: list[_Sentence] = []
    for passage in passages:
        candidates.extend(_sentences(passage, len(candidates)))
    if not wanted or not candidates:
        return []
    frequency = Counter(term for sentence in candidates for term in sentence.terms & wanted)
    weight = {term: math.log(1 + len(candidates) / count) for term, count in frequency.items()}

    def score(sentence: _Sentence) -> float:
        return sum(weight[term] for term in sentence.terms & wanted)

    ranked = sorted((s for s in candidates if score(s) > 0), key=lambda s: (-score(s), s.order))
    chosen: list[_Sentence] = []
    per_passage: Counter[int] = Counter()
    for sentence in ranked:
        if per_passage[sentence.number] < MAX_QUOTES_PER_PASSAGE:
            chosen.append(sentence)
            per_passage[sentence.number] += 1
        if len(chosen) == MAX_QUOTES:
            break
    return chosen


def _quote(text: str) -> str:
    if len(text) > MAX_QUOTE_CHARS:
        text = text[:MAX_QUOTE_CHARS].rsplit(" ", 1)[0] + " …"
    return text


class ExtractiveProvider(ChatProvider):
    def __init__(self) -> None:
        super().__init__(ProviderContext("extractive", "Extractive", base_url="", api_key_env=None, api_key=None))

    @property
    def no_tools_reason(self) -> str:
        return "the extractive provider quotes the passages and has no model to call tools; choose a model provider"

    async def _stream_once(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        passages = list(request.passages)
        pieces = [PREAMBLE]
        if not passages:
            pieces.append(" I found no passages in your notes for this question.")
        else:
            quotes = best_sentences(request.question, passages)
            if quotes:
                pieces.append(" The passages that best match your question say:\n")
                pieces.extend(f"\n> {_quote(sentence.text)} [{sentence.number}]\n" for sentence in quotes)
            else:
                pieces.append(
                    f" None of the {len(passages)} passages I found share words with your question;"
                    " the closest by search is [1]."
                )
        for piece in pieces:
            yield TextDelta(piece)
        read = request.question + "".join(p.text for p in passages)
        yield Usage(count_tokens(read), count_tokens("".join(pieces)), "end_turn", "extractive")
