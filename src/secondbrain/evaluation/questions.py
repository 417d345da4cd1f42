"""The evaluation's inputs: a vault's own question set (JSON lines), and BEIR benchmarks (corpus, queries, qrels)."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from secondbrain.errors import InvalidInput
from secondbrain.llm import ChatMessage

# The keys of a question line the evaluation reads.
QUESTION_KEYS = frozenset({"id", "question", "expected", "history", "kind", "answer_hint", "now", "pages"})
# Where a vault keeps its questions unless --qa names another file.
DEFAULT_QA_FILE = Path(".secondbrain") / "eval.jsonl"


@dataclass(frozen=True)
class Question:
    """One question and the notes that answer it, as note-level relevance: the first expected note is the best
    (relevance 2), the others also answer it (relevance 1)."""

    id: str
    text: str
    relevant: dict[str, int]
    history: tuple[ChatMessage, ...] = ()
    kind: str = "general"
    # Words a right answer contains (`eval --answers`); empty when the question has none.
    answer_hint: str = ""
    # When it is asked, ISO 8601 with its UTC offset: "last week" in it is read from then. "": the real clock.
    now: str = ""
    # The pages (of a PDF, or a presentation's slides) that answer it, by expected file: page-level recall needs
    # one of them. Empty when the question names none.
    pages: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def page_units(self) -> set[str]:
        """Its pages as the units a page ranking names (`page_unit`)."""
        return {page_unit(path, page) for path, numbers in self.pages.items() for page in numbers}


def page_unit(path: str, page: int) -> str:
    """One page of one file, as Obsidian links to it: `Manuals/Guide.pdf#page=12`."""
    return f"{path}#page={page}"


@dataclass
class QuestionSet:
    name: str
    questions: list[Question] = field(default_factory=list)
    # Keys of the question file the evaluation does not read (an annotated file's `answer_hint`, `notes`, ...), with
    # how many lines had each: ignored, and reported once.
    ignored: dict[str, int] = field(default_factory=dict)


def load_qa(path: Path) -> QuestionSet:
    """Read a question file: one JSON object per line, `{"id", "question", "expected": [paths], "history"?,
    "kind"?, "answer_hint"?, "now"?, "pages"?: {path: [page, ...]}}`; other keys are ignored (and counted in
    `ignored`). Every problem names its line."""
    if not path.is_file():
        raise InvalidInput(
            f"no question file at {path}: write one JSON object per line, such as "
            '{"id": "q1", "question": "...", "expected": ["Folder/Note.md"]}'
        )
    questions: list[Question] = []
    seen: set[str] = set()
    ignored: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        where = f"{path}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as error:
            raise InvalidInput(f"{where}: not valid JSON ({error.msg})") from None
        questions.append(_question(raw, where, seen))
        for key in set(raw) - QUESTION_KEYS:
            ignored[key] = ignored.get(key, 0) + 1
    if not questions:
        raise InvalidInput(f"{path} has no questions")
    return QuestionSet(path.name, questions, dict(sorted(ignored.items())))


def _question(raw: object, where: str, seen: set[str]) -> Question:
    if not isinstance(raw, dict):
        raise InvalidInput(f"{where}: each line must be a JSON object")
    qid, text, expected = raw.get("id"), raw.get("question"), raw.get("expected")
    if not isinstance(qid, str) or not qid:
        raise InvalidInput(f"{where}: 'id' must be a non-empty string")
    if qid in seen:
        raise InvalidInput(f"{where}: the id {qid!r} is used twice")
    seen.add(qid)
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(f"{where}: 'question' must be a non-empty string")
    if not isinstance(expected, list) or not expected or not all(isinstance(p, str) and p for p in expected):
        raise InvalidInput(f"{where}: 'expected' must be a non-empty list of vault-relative note paths")
    history = []
    for turn in raw.get("history") or []:
        if not isinstance(turn, dict) or turn.get("role") not in ("user", "assistant") or not turn.get("content"):
            raise InvalidInput(f'{where}: each \'history\' entry is {{"role": "user"|"assistant", "content"}}')
        history.append(ChatMessage(turn["role"], turn["content"]))
    kind = raw.get("kind", "general")
    if not isinstance(kind, str) or not kind:
        raise InvalidInput(f"{where}: 'kind' must be a non-empty string")
    hint = raw.get("answer_hint", "")
    if not isinstance(hint, str):
        raise InvalidInput(f"{where}: 'answer_hint' must be a string (words a right answer contains)")
    now = raw.get("now", "")
    if not isinstance(now, str) or (now and not _is_moment(now)):
        raise InvalidInput(f"{where}: 'now' must be ISO 8601 with its UTC offset, like \"2026-11-30T18:00:00+00:00\"")
    relevant = {path: (2 if i == 0 else 1) for i, path in reversed(list(enumerate(expected)))}
    pages = _pages(raw.get("pages"), expected, where)
    return Question(qid, text.strip(), relevant, tuple(history), kind, hint.strip(), now.strip(), pages)


def _pages(raw: object, expected: list[str], where: str) -> dict[str, tuple[int, ...]]:
    if raw is None:
        return {}
    shape = f"{where}: 'pages' must map expected files to their page numbers, like {{\"Guide.pdf\": [12, 13]}}"
    if not isinstance(raw, dict):
        raise InvalidInput(shape)
    pages: dict[str, tuple[int, ...]] = {}
    for path, numbers in raw.items():
        if path not in expected:
            raise InvalidInput(f"{where}: 'pages' names {path!r}, which is not among 'expected'")
        if not isinstance(numbers, list) or not numbers:
            raise InvalidInput(shape)
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in numbers):
            raise InvalidInput(shape)
        pages[path] = tuple(numbers)
    return pages


def _is_moment(text: str) -> bool:
    try:
        return datetime.fromisoformat(text.strip()).tzinfo is not None
    except ValueError:
        return False


@dataclass(frozen=True)
class BeirDocument:
    id: str
    title: str
    text: str


@dataclass
class BeirDataset:
    name: str
    corpus: list[BeirDocument]
    questions: QuestionSet


def load_beir(directory: Path, split: str = "test") -> BeirDataset:
    """A BEIR dataset folder: corpus.jsonl, queries.jsonl and qrels/<split>.tsv. Only queries with judgements in
    the split are kept, as BEIR's own evaluation does."""
    corpus_path, queries_path, qrels_path = (
        directory / "corpus.jsonl",
        directory / "queries.jsonl",
        directory / "qrels" / f"{split}.tsv",
    )
    for needed in (corpus_path, queries_path, qrels_path):
        if not needed.is_file():
            raise InvalidInput(f"{directory} is not a BEIR dataset folder: {needed.name} is missing ({needed})")
    corpus = []
    for line in corpus_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            raw = json.loads(line)
            corpus.append(BeirDocument(str(raw["_id"]), raw.get("title", "") or "", raw.get("text", "") or ""))
    texts = {}
    for line in queries_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            raw = json.loads(line)
            texts[str(raw["_id"])] = raw["text"]
    judged: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            score = int(row["score"])
            if score > 0:
                judged.setdefault(row["query-id"], {})[note_path(row["corpus-id"])] = score
    questions = [Question(qid, texts[qid], relevant, kind="beir") for qid, relevant in judged.items() if qid in texts]
    return BeirDataset(directory.name, corpus, QuestionSet(f"{directory.name}/{split}", questions))


def note_path(document_id: str) -> str:
    """The vault path a BEIR document is written to (ids are digits or simple names)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in document_id)
    return f"{safe}.md"
