"""Questions to suggest on the empty chat screen (SuggestQuestions), drawn from the vault's own notes, never canned.

No language model is needed (none is configured by default): a question is made from a note's title and headings, by
what a heading says the section holds. A heading that is a question is asked as written; a section of decisions
becomes "What did I decide for the Kitchen Renovation?", a plan "What is the plan for the Lisbon Trip?", packing
"What should I pack for the Lisbon Trip?", any other heading "What is in the Pests section of my Vegetable Beds
note?", and a note with no headings "What do my notes say about Thai Green Curry?". Daily notes are left out
(their name is their day: a question drawn from it asks nothing).

Each question is then asked as a chat turn would ask it (the pipeline's ranking, no condensing or reranking), and kept
only when its own note is among the first three notes found: a suggestion must be answerable. The most recently
changed notes come first, one question per note, each kind of question once before any comes again, so the list is
varied; the same index gives the same list (cached until a note is written, renamed or deleted).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from secondbrain.date_sources import DAY_NAME
from secondbrain.errors import InvalidInput
from secondbrain.retrieve import store
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.pipeline import Retriever
from secondbrain.retrieve.retrieval import RetrievalOptions
from secondbrain.retrieve.store.statement import deadline_after

DEFAULT_LIMIT = 4
MAX_LIMIT = 12
# Notes read to draw from, for `limit` questions: enough that some may fail their check and the list still fills.
NOTES_PER_QUESTION = 3
MIN_NOTES = 12
# A question is kept when its note is among this many notes its ranking found first.
WITHIN_NOTES = 3
# The most questions checked (each a ranking, tens of milliseconds) for `limit` questions: a vault whose questions
# mostly miss gives a shorter list rather than a slow one.
CHECKS_PER_QUESTION = 4
TIMEOUT_SECONDS = 10.0
# A heading of more words than this is a sentence, not a name for a section; a title of more words is not a subject.
MAX_HEADING_WORDS = 6
MAX_TITLE_WORDS = 4

_PARENTHESIS = re.compile(r"\s*\([^)]*\)\s*$")
_WORD = re.compile(r"[\w'\u2019-]+", re.UNICODE)
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|we|our)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Question:
    text: str
    note_path: str
    kind: str


# What a heading says its section holds (the first whose words it starts with), and the question that asks for it;
# `{the}` is the note's title as a noun phrase ("the Lisbon Trip", "Running"), `{title}` as written.
_KINDS: list[tuple[str, tuple[str, ...], str]] = [
    ("decisions", ("decision", "decisions", "decided", "what we decided"), "What did I decide for {the}?"),
    ("open", ("open questions", "open issues", "questions", "unresolved"), "What is still open on {the}?"),
    ("plan", ("plan", "the plan", "plans", "itinerary"), "What is the plan for {the}?"),
    ("todo", ("things to do", "to do", "todo", "tasks", "next steps"), "What is there to do on {the}?"),
    ("goal", ("goal", "goals", "aim", "objective"), "What is the goal of {the}?"),
    ("budget", ("budget", "costs", "cost"), "What is the budget for {the}?"),
    ("packing", ("packing", "packing list", "what to pack"), "What should I pack for {the}?"),
    ("idea", ("main idea", "key idea", "big idea", "summary"), "What is the main idea of {title}?"),
]
_RANK = {kind: rank for rank, (kind, _, _) in enumerate(_KINDS)}


def checked_limit(limit: int) -> int:
    if not 0 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit is {limit}: ask for 1 to {MAX_LIMIT} questions, or 0 for {DEFAULT_LIMIT}")
    return limit or DEFAULT_LIMIT


def subject(title: str) -> str:
    """The note's title as a subject: without a trailing parenthesis ("Atomic Habits (James Clear)")."""
    return _PARENTHESIS.sub("", title).strip() or title.strip()


def _the(title: str) -> str:
    """A title as a noun phrase: a name of several capitalised words takes "the" ("the Kitchen Renovation"); one
    word, or one that starts with its own article, stays as written ("Running", "The Garden")."""
    words = title.split()
    if len(words) < 2 or words[0].lower() in ("the", "a", "an", "my", "our") or not words[0][:1].isupper():
        return title
    return f"the {title}"


def _in_sentence(heading: str) -> str:
    """A heading inside a sentence: as written, but for a leading article ("The four laws" -> "four laws": "the"
    comes before it already)."""
    words = heading.split(maxsplit=1)
    return words[1] if len(words) == 2 and words[0].lower() == "the" else heading


def _kind_of(heading: str) -> tuple[str, str] | None:
    said = " ".join(_WORD.findall(heading.lower()))
    for kind, starts, template in _KINDS:
        if any(said == start or said.startswith(start + " ") for start in starts):
            return kind, template
    return None


def candidates(note: store.SourceNote) -> list[Question]:
    """The questions `note` gives, best first: its headings that are questions, then one per kind of section it has,
    then one per other heading, then one about its title when it has no usable heading."""
    title = subject(note.title)
    the = _the(title)
    asked: list[Question] = []
    kinds_seen: set[str] = set()
    plain: list[Question] = []
    for heading in note.headings:
        heading = heading.strip()
        words = _WORD.findall(heading)
        if not words or heading.lower() == title.lower() or DAY_NAME.match(heading):
            continue
        if heading.endswith("?") and len(words) >= 3:
            asked.append(Question(heading, note.path, "question"))
            continue
        if (kind := _kind_of(heading)) is not None:
            name, template = kind
            if name not in kinds_seen:
                kinds_seen.add(name)
                asked.append(Question(template.format(the=the, title=title), note.path, name))
            continue
        if len(words) <= MAX_HEADING_WORDS and not _FIRST_PERSON.search(heading):
            plain.append(
                Question(f"What is in the {_in_sentence(heading)} section of my {title} note?", note.path, "section")
            )
    # A heading that asks comes first, then the kinds in the table's order (decisions before a goal), then the rest.
    asked.sort(key=lambda question: _RANK.get(question.kind, -1))
    questions = asked + plain
    if not questions and len(title.split()) <= MAX_TITLE_WORDS:
        questions.append(Question(f"What do my notes say about {title}?", note.path, "title"))
    return questions


async def chosen(
    per_note: list[list[Question]], limit: int, answers: Callable[[Question], Awaitable[bool]]
) -> list[Question]:
    """Up to `limit` questions, one per note, in the notes' order: first each note's best question of a kind not yet
    chosen, then any note's best; each only if it `answers` (asked in turn, so only what is needed is checked, and
    at most CHECKS_PER_QUESTION * `limit` are)."""
    picked: dict[str, Question] = {}
    kinds: set[str] = set()
    tried: set[Question] = set()
    for fresh_kinds_only in (True, False):
        for questions in per_note:
            if len(picked) == limit:
                break
            if not questions or questions[0].note_path in picked:
                continue
            for question in questions:
                if (fresh_kinds_only and question.kind in kinds) or question in tried:
                    continue
                if len(tried) == CHECKS_PER_QUESTION * limit:
                    break
                tried.add(question)
                if await answers(question):
                    picked[question.note_path] = question
                    kinds.add(question.kind)
                    break
    order = {questions[0].note_path: index for index, questions in enumerate(per_note) if questions}
    return sorted(picked.values(), key=lambda question: order[question.note_path])


class Suggester:
    """Draws the questions, checks them against the index, and keeps the last list until the index changes."""

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self._cached: tuple[tuple[object, ...], int, list[Question]] | None = None
        self._lock = asyncio.Lock()

    async def suggest(self, limit: int = 0) -> list[Question]:
        limit = checked_limit(limit)
        deadline = deadline_after(TIMEOUT_SECONDS)
        async with self._lock:  # one drawing at a time; a second caller reads its result
            async with self.retriever.db.pool.acquire(timeout=TIMEOUT_SECONDS) as connection:
                mark = await store.index_mark(connection, deadline)
                if self._cached is not None and self._cached[:2] == (mark, limit):
                    return self._cached[2]
                notes = await store.recent_notes(connection, max(limit * NOTES_PER_QUESTION, MIN_NOTES), deadline)
            ids = {note.path: note.id for note in notes}
            options = RetrievalOptions.resolve(self.retriever.settings, condense=False, alternates=False, rerank=False)

            async def answers(question: Question) -> bool:
                return ids[question.note_path] in await self._first_notes(question.text, options)

            questions = await chosen([candidates(note) for note in notes], limit, answers)
            self._cached = (mark, limit, questions)
            return questions

    async def _first_notes(self, text: str, options: RetrievalOptions) -> list[int]:
        """The first WITHIN_NOTES notes (ids) a chat turn's ranking finds for `text`, links aside."""
        ranking = await self.retriever.rank(text, [], Filters(), options)
        found: list[int] = []
        for item in ranking.ranked:
            if not item.via_link and item.fused.candidate.file_id not in found:
                found.append(item.fused.candidate.file_id)
        return found[:WITHIN_NOTES]
