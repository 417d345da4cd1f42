"""The provider that needs no model: it quotes the sentences of the passages that best match the question.

Always available, so a fresh install with no API key still answers, with citations. It says plainly that it is
quoting, not reasoning.

What it quotes are whole statements as the note's reader sees them: a paragraph's hard-wrapped lines are joined
before it is cut into sentences, a list item (with its wrapped lines) and a table row are quoted whole, and headings,
code and the chunk's "Title > Heading" label are never quoted. Words are matched on their English stems (Snowball),
so "tiles" finds "tile" and "decision" finds "decided".

Quotes are chosen greedily for coverage: each next quote must bring question words that the quotes before it did not,
each word weighted by its rarity among the candidate sentences (an IDF), so "kitchen" in a kitchen note counts for
little and "tile" for a lot. A section's heading counts as part of its sentences (under "## Budget", "About 1,600
euros" is about the budget), a note's title only as background: it covers a word once the note is quoted, but does not
make a sentence worth quoting by itself. Questions, pointers to the reader ("See [[X]]") and near-duplicates are not
quoted; open questions, sentences the conversation already quoted and notes about the vault itself are used only when
nothing else matches. When nothing does, the answer says so in one sentence and names the closest notes.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import PurePosixPath

import snowballstemmer

from secondbrain.llm.base import ChatProvider
from secondbrain.llm.tokens import count_tokens
from secondbrain.llm.types import ChatRequest, SourcePassage, StreamEvent, TextDelta, Usage
from secondbrain.providers import ProviderContext

MAX_QUOTES = 3
MAX_QUOTE_CHARS = 400
MAX_NOTES_LISTED = 3
# A quote needs at least this many words, so a stray "Yes." or a label is never an answer.
MIN_QUOTE_WORDS = 3
# Two sentences sharing this much of their words say the same thing (a chunk overlap, a note copied into another).
NEAR_DUPLICATE = 0.8
# What a word of the question matched only in the section's heading adds to a sentence's score, and one matched only
# in the note's title: a word the sentence itself says is the better evidence, the heading's counts for most of it
# (under "## Budget", "About 1,600 euros" is about the budget), the title's only decides between equals.
HEADING_SHARE = 0.75
TITLE_SHARE = 0.25

PREAMBLE = "No language model is configured, so I am quoting your notes rather than reasoning about them."

# Letters and digits; underscores are markdown emphasis (`_word_`), not part of a word.
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOPWORDS = frozenset(
    line
    for line in (resources.files("secondbrain.llm") / "stopwords.txt").read_text(encoding="utf-8").splitlines()
    if line and not line.startswith("#")
)
_STEMMER = snowballstemmer.stemmer("english")

# Markdown structure, line by line (see `_units`).
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_RULE = re.compile(r"^\s{0,3}(?:(?:\*\s*){3,}|(?:-\s*){3,}|(?:_\s*){3,})$")
_TAGS_ONLY = re.compile(r"^\s*(?:#[^\s#]+\s*)+$")
_BLOCKQUOTE = re.compile(r"^\s*(?:>\s?)+")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_TABLE_ROW = re.compile(r"^\s*\|")
_TABLE_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")

# A sentence ends at . ! or ? (and any closing quote, bracket or emphasis) followed by space; see `_sentences`.
_SENTENCE_BREAK = re.compile(r"[.!?]+[\"'\u201d\u2019)\]*_]*\s+")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "dr", "mr", "mrs", "ms", "st", "approx", "ca", "fig"})

# Not answers: a sentence that opens as an indirect question ("Whether to tile ...", "How to ..."), and one that
# points the reader elsewhere ("See [[X]].", "Related: [[X]]") or tells them how to use the tool ("Ask the chat ...").
_INDIRECT_QUESTION = re.compile(r"^\W*(?:whether|(?:how|what|where|when|which|who|why) to)\b", re.IGNORECASE)
_TO_THE_READER = re.compile(
    r"^\W*(?:(?:see(?:\s+also)?|related|cf\.?)\b\W*\[\[|(?:ask|try|type|click|tap)\b.*\b(?:chat|vault|assistant|secondbrain)\b)",
    re.IGNORECASE,
)
# A note at the vault's root named README, index or Home describes the vault itself (its layout, what to ask it),
# not its owner's life: its words overlap every question a little and it answers none, so it is quoted last.
_VAULT_NOTES = frozenset({"readme", "index", "home"})

# Tiers of candidates, tried in order: a later tier is used only when no sentence of an earlier one matches.
_ANSWER, _WEAK, _ABOUT_THE_VAULT = 0, 1, 2


@lru_cache(maxsize=65536)
def _keys(word: str) -> frozenset[str]:
    """The stems `word` matches on: its Snowball stem, and for the few derivations Snowball keeps apart that a
    question and a note often split between them, the stem of the related word too."""
    stem = _STEMMER.stemWord(word)
    keys = {stem}
    if word.endswith("sion") and stem.endswith("s") and not stem.endswith("ss"):
        keys.add(stem[:-1] + "d")  # decision/decide, inclusion/include, extension/extend
    if word.endswith("ician"):
        keys.add(_STEMMER.stemWord(word[: -len("ician")] + "ic"))  # electrician/electrics
    if word.endswith("ery") and len(word) > 6:
        keys.add(_STEMMER.stemWord(word[:-1]))  # joinery/joiner, delivery/deliver
    return frozenset(keys)


def _content_words(text: str) -> list[str]:
    return [word for word in (w.lower() for w in _WORD.findall(text)) if word not in _STOPWORDS]


def terms(text: str) -> set[str]:
    """The stems of the content words of `text` (function words dropped)."""
    return {_STEMMER.stemWord(word) for word in _content_words(text)}


def _key_set(text: str) -> frozenset[str]:
    return frozenset(key for word in _content_words(text) for key in _keys(word))


def _plain(text: str) -> str:
    return " ".join(text.split())


def is_about_the_vault(path: str) -> bool:
    note = PurePosixPath(path)
    return bool(path) and len(note.parts) == 1 and note.stem.lower() in _VAULT_NOTES


@dataclass(frozen=True)
class _Sentence:
    """A quotable statement of a passage: a sentence, a list item or a table row."""

    text: str
    number: int
    order: int
    terms: frozenset[str]
    rank: int = 0
    """The passage's place in the search's order, 0 for the closest."""
    heading: frozenset[str] = frozenset()
    """The stems of the nearest heading (and a table row's header): what the section says it is about."""
    context: frozenset[str] = frozenset()
    """The stems of the note's title and the headings above the nearest one."""
    tier: int = _ANSWER


@dataclass
class _Reader:
    """Turns one passage into quotable units, keeping track of the headings above each."""

    passage: SourcePassage
    rank: int
    start: int
    earlier: str
    """The conversation's earlier answers, whitespace collapsed: a sentence they quoted is kept for when nothing new
    matches."""
    title: list[str] = field(default_factory=list)
    headings: dict[int, str] = field(default_factory=dict)
    units: list[_Sentence] = field(default_factory=list)

    def heading_keys(self, extra: str = "") -> tuple[frozenset[str], frozenset[str]]:
        levels = sorted(self.headings)
        nearest = self.headings[levels[-1]] if levels and levels[-1] > 1 else ""
        above = [self.headings[level] for level in levels if self.headings[level] != nearest]
        return _key_set(f"{nearest} {extra}"), _key_set(" ".join([*self.title, *above]))

    def add(self, text: str, header: str = "") -> None:
        text = text.strip()
        if len(_WORD.findall(text)) < MIN_QUOTE_WORDS or "?" in text or _TO_THE_READER.search(text):
            return
        heading, context = self.heading_keys(header)
        tier = _ABOUT_THE_VAULT if is_about_the_vault(self.passage.path) else _ANSWER
        # An open question names what is not known yet, and a sentence the conversation quoted was read already.
        if _INDIRECT_QUESTION.search(text) or "question" in heading or (self.earlier and _plain(text) in self.earlier):
            tier = max(tier, _WEAK)
        order = self.start + len(self.units)
        number = self.passage.number
        self.units.append(_Sentence(text, number, order, _key_set(text), self.rank, heading, context, tier))

    def label(self, lines: list[str]) -> int:
        """How many lines the chunk's "Title > Heading" label takes at the start (0 or 1), its parts noted."""
        first = next((i for i, line in enumerate(lines) if line.strip()), None)
        if first is None:
            return 0
        line = lines[first].strip()
        title = self.passage.title.strip()
        followed_by_blank = first + 1 < len(lines) and not lines[first + 1].strip()
        looks_like_label = line == title or " > " in line
        if not followed_by_blank or not looks_like_label or line.endswith((".", "!", "?", ":", ";")):
            return 0
        *above, nearest = line.split(" > ")
        self.title.extend(above)
        if above:
            self.headings[2] = nearest
        else:
            self.title.append(nearest)
        return first + 1


def _sentences(text: str) -> list[str]:
    """`text` (one paragraph, lines joined) cut into sentences: not before a lowercase letter, nor after "e.g."."""
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_BREAK.finditer(text):
        following = text[match.end() : match.end() + 1]
        # The word before the stop; abbreviations are short, so a few characters are enough to read it.
        last = re.search(r"([\w.]+?)\.*$", text[max(start, match.start() - 12) : match.start() + 1])
        if following.islower() or (last is not None and last.group(1).lower().rstrip(".") in _ABBREVIATIONS):
            continue
        pieces.append(text[start : match.end()])
        start = match.end()
    pieces.append(text[start:])
    return [piece.strip() for piece in pieces if piece.strip()]


def _cells(row: str) -> str:
    """A table row as `a | b | c`: the note's cells, without the outer pipes."""
    return _plain(row.strip().strip("|"))


def _units(passage: SourcePassage, rank: int, start: int, earlier: str) -> list[_Sentence]:
    """The quotable units of `passage`, in order, numbered from `start`."""
    reader = _Reader(passage, rank, start, earlier, title=[passage.title] if passage.title else [])
    lines = passage.text.splitlines()
    lines = lines[reader.label(lines) :]
    kind, buffer = "", []

    def flush() -> None:
        nonlocal kind, buffer
        if kind == "paragraph":
            for sentence in _sentences(_plain(" ".join(buffer))):
                reader.add(sentence)
        elif kind == "item":
            item = _plain(" ".join(buffer))
            # A list item is one statement, however it is wrapped; only one too long to quote is cut into sentences.
            for piece in [item] if len(item) <= MAX_QUOTE_CHARS else _sentences(item):
                reader.add(piece)
        elif kind == "table":
            rows = [row for row in buffer if not _TABLE_DELIMITER.match(row)]
            header = ""
            if len(buffer) > 1 and _TABLE_DELIMITER.match(buffer[1]):
                header, rows = _cells(buffer[0]), rows[1:]
            # The header row names what each column holds: it is read with every row, as a heading would be.
            for row in rows:
                reader.add(_cells(row), header)
        kind, buffer = "", []

    fence = ""
    for raw in lines:
        if fence:
            # Code is not prose to quote: everything up to the closing fence is skipped.
            if raw.strip().startswith(fence):
                fence = ""
            continue
        opened = _FENCE.match(raw)
        if opened:
            flush()
            fence = opened.group(1)[0] * 3
            continue
        line = _BLOCKQUOTE.sub("", raw)
        heading = _HEADING.match(line)
        if not line.strip() or _RULE.match(line) or _TAGS_ONLY.match(line) or heading:
            flush()
            if heading:
                level = len(heading.group(1))
                reader.headings = {k: v for k, v in reader.headings.items() if k < level}
                reader.headings[level] = heading.group(2)
            continue
        item = _LIST_ITEM.match(line)
        if item:
            flush()
            kind, buffer = "item", [item.group(1)]
        elif _TABLE_ROW.match(line):
            if kind != "table":
                flush()
                kind = "table"
            buffer.append(line)
        else:
            if kind == "table":
                flush()
            # A line that starts no block continues the paragraph or the list item above it (a hard wrap).
            kind = kind or "paragraph"
            buffer.append(line)
    flush()
    return reader.units


def _near_duplicate(a: _Sentence, b: _Sentence) -> bool:
    if not a.terms or not b.terms:
        return _plain(a.text) == _plain(b.text)
    return len(a.terms & b.terms) / len(a.terms | b.terms) >= NEAR_DUPLICATE


def _choose(words: list[frozenset[str]], candidates: list[_Sentence]) -> list[_Sentence]:
    """Greedy coverage: each quote is the one adding the most weight of question words not yet covered."""

    def matched(keys: frozenset[str]) -> set[int]:
        return {i for i, word in enumerate(words) if word & keys}

    said = [matched(s.terms) for s in candidates]
    stated = [said[i] | matched(s.heading) for i, s in enumerate(candidates)]
    named = [matched(s.context) for s in candidates]
    frequency = [sum(1 for i in range(len(candidates)) if w in stated[i] | named[i]) for w in range(len(words))]
    weight = [math.log(1 + len(candidates) / count) if count else 0.0 for count in frequency]

    def answers(index: int, first: bool) -> bool:
        # A question naming three things or more is not answered by a sentence that shares one word with it (the
        # "hot" of "How hot should the oven be for bread?" in a note on watering basil when it is hot), unless it
        # is the first quote, the search ranked its passage first and the word is not just the note's title:
        # "slugs" in the note on vegetable beds answers "How do I keep slugs off the plants?".
        if len(words) <= 2 or len(stated[index] | named[index]) >= 2:
            return True
        return first and candidates[index].rank == 0 and bool(stated[index] - named[index])

    chosen: list[_Sentence] = []
    covered: set[int] = set()
    while len(chosen) < MAX_QUOTES:
        best: tuple[float, int] | None = None
        for index, sentence in enumerate(candidates):
            new = stated[index] - covered
            if not new or not answers(index, not chosen) or any(_near_duplicate(sentence, other) for other in chosen):
                continue
            gain = (
                sum(weight[w] for w in new & said[index])
                + HEADING_SHARE * sum(weight[w] for w in new - said[index])
                + TITLE_SHARE * sum(weight[w] for w in named[index] - stated[index] - covered)
            )
            if best is None or gain > best[0]:
                best = (gain, index)
        if best is None:
            break
        chosen.append(candidates[best[1]])
        covered |= stated[best[1]] | named[best[1]]
    # In the notes' order (the search's, then the note's own), so quotes from one passage read as they do there.
    return sorted(chosen, key=lambda sentence: sentence.order)


def best_sentences(question: str, passages: Sequence[SourcePassage], earlier: Iterable[str] = ()) -> list[_Sentence]:
    """The sentences to quote, in the order of the notes; none when nothing answers. `earlier` are the
    conversation's earlier answers: what they quoted is quoted again only when nothing else matches."""
    words = list(dict.fromkeys(_keys(word) for word in _content_words(question)))
    if not words:
        return []
    said = _plain(" ".join(earlier))
    candidates: list[_Sentence] = []
    for rank, passage in enumerate(passages):
        candidates.extend(_units(passage, rank, len(candidates), said))
    for tier in (_ANSWER, _WEAK, _ABOUT_THE_VAULT):
        chosen = _choose(words, [s for s in candidates if s.tier <= tier])
        if chosen:
            return chosen
    return []


def closest_notes(passages: Sequence[SourcePassage]) -> list[str]:
    """`Title [n]` for the first passage of each of the best notes, in the search's order, notes about the vault
    last; at most MAX_NOTES_LISTED."""
    listed: dict[str, str] = {}
    for passage in sorted(passages, key=lambda p: is_about_the_vault(p.path)):
        name = _plain(passage.title) or PurePosixPath(_plain(passage.path)).stem
        listed.setdefault(passage.path or name or str(passage.number), f"{name} [{passage.number}]".lstrip())
    return list(listed.values())[:MAX_NOTES_LISTED]


def _nothing_matches(passages: Sequence[SourcePassage]) -> str:
    notes = closest_notes(passages)
    names = notes[0] if len(notes) == 1 else f"{', '.join(notes[:-1])} and {notes[-1]}"
    found = "the passage" if len(passages) == 1 else f"the {len(passages)} passages"
    closest = "note is" if len(notes) == 1 else "notes are"
    return (
        f" No sentence in {found} I found shares enough words with your question to quote;"
        f" the closest {closest} {names}."
    )


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
            earlier = [m.content for m in request.messages if m.role == "assistant"]
            quotes = best_sentences(request.question, passages, earlier)
            if quotes:
                pieces.append(" The passages that best match your question say:\n")
                pieces.extend(f"\n> {_quote(sentence.text)} [{sentence.number}]\n" for sentence in quotes)
            else:
                pieces.append(_nothing_matches(passages))
        for piece in pieces:
            yield TextDelta(piece)
        read = request.question + "".join(p.text for p in passages)
        yield Usage(count_tokens(read), count_tokens("".join(pieces)), "end_turn", "extractive")
