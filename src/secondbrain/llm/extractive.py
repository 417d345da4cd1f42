"""The provider that needs no model: it quotes the passages that best match the question.

Always available, so a fresh install with no API key still answers, with citations. It says plainly that it is
quoting, not reasoning.

What it quotes are whole statements as the note's reader sees them (`quote_units`): a paragraph's hard-wrapped lines
are joined before it is cut into sentences, a list item (with its wrapped lines) and a table row are quoted whole, and
headings and the chunk's "Title > Heading" label are never quoted. Words are matched on their English stems
(Snowball), so "tiles" finds "tile" and "decision" finds "decided"; the question's bits of code (`{:#?}`,
`into_iter`) are matched as written (`quote_words`).

Quotes are chosen greedily for coverage: each next quote must bring question words that the quotes before it did not,
each word weighted by its rarity among the candidate sentences (an IDF), so "kitchen" in a kitchen note counts for
little and "tile" for a lot. A section's heading counts as part of its sentences (under "## Budget", "About 1,600
euros" is about the budget), a note's title only as background: it covers a word once the note is quoted, but does not
make a sentence worth quoting by itself. The search's order is evidence too (it knew what the words alone do not):
a sentence's weight is divided by its passage's place (1 for [1], 2 for [2], ...), the first quote comes from the
best-ranked passage that has a sentence to quote (usually [1]), and a later quote that adds less than a tenth of what
the first did is filler, left out. Time is evidence too: of two statements the notes date (a journal's day, a running
log's dated heading; never a file's modification time) that say the same question words, the later is quoted, as a
model is told to lead with the later of two passages that disagree: the tiles chosen again in March, not February's.

A question asking for a value is answered with one (`quote_slots`): "What colour ...?" by a statement holding a colour
word, "How much does ... cost?" by one naming money with a figure, "What was my time ...?" by a time in figures, "When
is ...?" by a day or month named, "Who ...?" by a name. The first quote is then the best-ranked passage's best such
statement that says at least half of what that passage's best statement says, from a passage ranked lower if [1] has
none ("The Porto half marathon: 2:03:51." of [2], not the target of [1]), and it leads the answer; the words naming the
slot ("colour", "cost") count as said by a statement holding its value, so "the wall is now Oat Milk, a warm
off-white" (11 April) restates "colour Chalk White" (21 February) and, later, is quoted instead. Each statement's day
is its own: the dated heading it sits under (in its text, or the headings its passage starts under), else its note's
own date (file name, front matter), else none; a quote's "6 October 2026:" is never another section's day.

Each quote then gets a little context, so it reads as the note says it: the rest of its paragraph when that is short,
the sentences around it that also speak of the question, what it introduces when it ends with a colon (a list, a
sentence, a short code block, fenced), and for a "How do I ...?" question the whole numbered list of steps it is one
of, or the short code block right after it. Questions, pointers to the reader ("See [[X]]") and near-duplicates are
not quoted, nor anything twice; open questions, sentences the conversation already quoted and notes about the vault
itself are used only when nothing else matches. When nothing does, the answer says so in one sentence and names the
closest notes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import math
import re
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import PurePosixPath

from secondbrain.date_sources import day_words
from secondbrain.llm.base import ChatProvider
from secondbrain.llm.quote_slots import Slot, holds, slot_of
from secondbrain.llm.quote_units import (
    ABOUT_THE_VAULT,
    ANSWER,
    CODE,
    ITEM,
    MAX_QUOTE_CHARS,
    SENTENCE,
    WEAK,
    Unit,
    fits_code,
    is_about_the_vault,
    plain,
    units,
)
from secondbrain.llm.quote_words import IDENTIFIER, content_words, identifier_keys, identifiers, keys, terms
from secondbrain.llm.tokens import count_tokens
from secondbrain.llm.types import ChatRequest, SourcePassage, StreamEvent, TextDelta, Usage
from secondbrain.providers import ProviderContext

__all__ = [
    "CHOSEN_PREAMBLE",
    "PREAMBLE",
    "ExtractiveProvider",
    "Quote",
    "best_sentences",
    "closest_notes",
    "is_about_the_vault",
    "quoted_only",
    "terms",
]

MAX_QUOTES = 3
MAX_NOTES_LISTED = 3
# Two sentences sharing this much of their words say the same thing (a chunk overlap, a note copied into another).
NEAR_DUPLICATE = 0.8
# What a word of the question matched only in the section's heading adds to a sentence's score, and one matched only
# in the note's title: a word the sentence itself says is the better evidence, the heading's counts for most of it
# (under "## Budget", "About 1,600 euros" is about the budget), the title's only decides between equals.
HEADING_SHARE = 0.75
TITLE_SHARE = 0.25
# A quote after the first is worth quoting only if it adds at least this share of what the first one did.
MIN_SHARE = 0.1
# A statement holding the value the question asks for (its slot) is the first quote when it says at least this share
# of the question's other words that the best-matching statement says, whatever its passage's place.
SLOT_SHARE = 0.5
# A quote's context: its whole paragraph when the paragraph is at most this long; the sentences around it that also
# say a word of the question, up to this length in all; a list quoted whole (steps, or what a sentence introduces).
PARAGRAPH_CHARS = 400
WINDOW_CHARS = 500
MAX_LIST_ITEMS = 8
MAX_LIST_CHARS = 800

PREAMBLE = "No language model is configured, so I am quoting your notes rather than reasoning about them."
# When a model could have answered (a provider has its key) and quoting was chosen all the same.
CHOSEN_PREAMBLE = "Quoting your notes, as chosen: no language model reasons about them for this answer."
QUOTES_FOLLOW = " The passages that best match your question say:\n"
# When the asker named the days and no statement shares the question's other words ("What did we do last weekend?"),
# what the best passage of those days says is the answer.
DAYS_SAY = " What your notes of those days say:\n"
# A passage of the days asked for is quoted from its start, at most this many statements of its first block.
DAY_OPENING_UNITS = 3
NO_PASSAGES = " I found no passages in your notes for this question."
# What this provider says in its own words, as opposed to what it quotes: never the conversation's subject, so a
# follow-up's search leaves it out (`quoted_only`). The "nothing matches" sentence keeps the notes it names.
_OWN_WORDS = re.compile(
    "|".join(
        [
            re.escape(PREAMBLE),
            re.escape(CHOSEN_PREAMBLE),
            re.escape(QUOTES_FOLLOW.strip()),
            re.escape(DAYS_SAY.strip()),
            re.escape(NO_PASSAGES.strip()),
            r"No sentence in (?:the passage|the \d+ passages) I found shares enough words with your question to quote;"
            r" the closest (?:note is|notes are)",
        ]
    )
)

# A question asking for a day: "When did I last change the batteries?", "what day was the inspection?".
_WHEN = re.compile(r"^\W*when\b|\bwhat\s+(?:day|date)\b|\bwhich\s+day\b", re.IGNORECASE)
_HOW_TO = re.compile(r"^\W*(?:how\s+(?:do|can|could|should|would|to)\b|what\s+are\s+the\s+steps\b)", re.IGNORECASE)


@dataclass(frozen=True)
class Quote:
    """What the answer quotes of one passage: the chosen unit with its context, and a code block it introduces."""

    text: str
    number: int
    order: int
    code: str = ""
    """A code block quoted after `text`, fenced when rendered."""
    language: str = ""
    parts: tuple[Unit, ...] = ()
    """The units it quotes, the code block's included."""
    unit: Unit | None = None
    """The unit chosen for the question's words; the other parts are its context."""


def _near_duplicate(a: Unit, b: Unit) -> bool:
    if not a.terms or not b.terms:
        return plain(a.text) == plain(b.text)
    return len(a.terms & b.terms) / len(a.terms | b.terms) >= NEAR_DUPLICATE


def _choose(
    words: list[frozenset[str]],
    candidates: list[Unit],
    later_first: bool = True,
    slot: Slot | None = None,
    today: str = "",
) -> list[Unit]:
    """Greedy coverage: each quote is the one adding the most weight of question words not yet covered, weighed by
    its passage's place in the search. In the order they were chosen, the best first. With a `slot`, the first is a
    statement holding a value of the kind asked for, when one says enough of the question (SLOT_SHARE). `today`: the
    asker's day; a statement dated after it never supersedes an earlier one."""

    def matched(keys: frozenset[str]) -> set[int]:
        return {i for i, word in enumerate(words) if word & keys}

    fills = [slot is not None and holds(slot, unit.text, bool(unit.day)) for unit in candidates]
    # The question's words that name the slot ("colour", "cost") are said by a statement holding its value.
    cues = matched(frozenset(key for cue in slot.cues for key in keys(cue))) if slot is not None else set()
    said = [matched(s.terms) | (cues if fills[i] else set()) for i, s in enumerate(candidates)]
    stated = [said[i] | matched(s.heading) for i, s in enumerate(candidates)]
    named = [matched(s.context) for s in candidates]
    either = [stated[i] | named[i] for i in range(len(candidates))]
    frequency = [sum(1 for found in either if w in found) for w in range(len(words))]
    weight = [math.log(1 + len(candidates) / count) if count else 0.0 for count in frequency]

    def answers(index: int, first: bool) -> bool:
        # A question naming three things or more is not answered by a sentence that shares one word with it (the
        # "hot" of "How hot should the oven be for bread?" in a note on watering basil when it is hot), unless it
        # is the first quote, the search ranked its passage first and the sentence says the word itself: "slugs"
        # in the note on vegetable beds answers "How do I keep slugs off the plants?".
        if len(words) <= 2 or len(either[index]) >= 2:
            return True
        return first and candidates[index].rank == 0 and bool(said[index])

    def found(index: int, covered: set[int]) -> float:
        """The weight of the question words `index` adds to `covered`, whatever its passage's place."""
        new = stated[index] - covered
        return (
            sum(weight[w] for w in new & said[index])
            + HEADING_SHARE * sum(weight[w] for w in new - said[index])
            + TITLE_SHARE * sum(weight[w] for w in named[index] - stated[index] - covered)
        )

    def gain(index: int, covered: set[int]) -> float:
        # The search's order is evidence the words alone do not have: [2] counts half as much as [1].
        return found(index, covered) / (1 + candidates[index].rank)

    def open_to(index: int, chosen: list[int], covered: set[int]) -> bool:
        return (
            bool(stated[index] - covered)
            and answers(index, not chosen)
            and not any(_near_duplicate(candidates[index], candidates[other]) for other in chosen)
        )

    def later_alike(index: int, chosen: list[int], covered: set[int]) -> int:
        """The latest dated unit saying every question word that `index` says, if later than it: of two dated
        statements alike (the tiles chosen in February, chosen again in March) the later is quoted, as a model is
        told to lead with the later of two passages that disagree. Not one dated after the asker's day: asked
        before the race, "what time am I going for?" is the target, not the result the notes hold since."""
        latest = index
        if candidates[index].day and said[index]:
            for other, unit in enumerate(candidates):
                if (
                    unit.day > candidates[latest].day
                    and (not today or unit.day <= today)
                    and said[other] >= said[index]
                    and fills[other] >= fills[index]  # a value asked for is restated with a value
                    and open_to(other, chosen, covered)
                ):
                    latest = other
        return latest

    first = [i for i in range(len(candidates)) if stated[i] and answers(i, True)]
    # The first quote comes from the best-ranked passage that has one to give: with a slot, the best-ranked that
    # holds the value asked for in a statement saying at least SLOT_SHARE of what that passage's best says.
    top = min((candidates[i].rank for i in first), default=0)
    fillers = [i for i in first if fills[i]]
    if fillers:
        enough = SLOT_SHARE * max(found(i, cues) for i in first if candidates[i].rank == top)
        fillers = [i for i in fillers if found(i, cues) >= enough]
        top = min((candidates[i].rank for i in fillers), default=top)
    chosen: list[int] = []
    covered: set[int] = set()
    first_gain = 0.0
    while len(chosen) < MAX_QUOTES:
        best: tuple[float, int] | None = None
        for index, unit in enumerate(candidates):
            if not chosen and (unit.rank != top or (fillers and not fills[index])):
                continue
            if not open_to(index, chosen, covered):
                continue
            value = gain(index, covered)
            if best is None or value > best[0]:
                best = (value, index)
        if best is None or (chosen and best[0] < MIN_SHARE * first_gain):
            break
        first_gain = first_gain or best[0]
        pick = later_alike(best[1], chosen, covered) if later_first else best[1]
        chosen.append(pick)
        covered |= stated[pick] | named[pick]
    return [candidates[index] for index in chosen]


def _neighbour(unit: Unit, candidates: Sequence[Unit], step: int) -> Unit | None:
    """The unit right after (`step` 1) or before (-1) `unit` in its passage, if nothing unquoted comes between."""
    return next((c for c in candidates if c.number == unit.number and c.position == unit.position + step), None)


def _list_of(unit: Unit, candidates: Sequence[Unit]) -> list[Unit] | None:
    """The whole list `unit` is an item of, when it is short enough to quote."""
    items = [c for c in candidates if c.kind == ITEM and c.block == unit.block]
    if len(items) > MAX_LIST_ITEMS or sum(len(i.text) for i in items) > MAX_LIST_CHARS:
        return None
    return items


def _introduced(unit: Unit, candidates: Sequence[Unit]) -> list[Unit] | None:
    """What `unit`, ending with a colon, introduces, when it can be quoted whole: a list, a sentence or a short code
    block."""
    following = _neighbour(unit, candidates, 1)
    if following is None or following.kind not in (SENTENCE, ITEM, CODE):
        return None
    if following.kind == CODE:
        return [following] if fits_code(following.text) else None
    if following.kind == ITEM:
        items = _list_of(following, candidates)
        if items and unit.kind == ITEM:
            # An item introduces the items nested under it ("- Options:" over its sub-items).
            after = itertools.dropwhile(lambda item: item.order <= unit.order, items)
            return list(itertools.takewhile(lambda item: item.indent > unit.indent, after)) or None
        return items
    return [following]


def _paragraph(unit: Unit, candidates: Sequence[Unit]) -> list[Unit]:
    """`unit` with the rest of its paragraph, when the paragraph is short and whole; else `unit` alone."""
    paragraph = [c for c in candidates if c.block == unit.block and c.kind == SENTENCE]
    whole = all(b.position == a.position + 1 for a, b in itertools.pairwise(paragraph))
    if whole and sum(len(c.text) + 1 for c in paragraph) <= PARAGRAPH_CHARS:
        return paragraph
    return [unit]


def _expand(
    unit: Unit, candidates: Sequence[Unit], how_to: bool, relevant: Callable[[Unit], bool], free: Callable[[Unit], bool]
) -> Quote:
    """The quote for `unit`: with the rest of its short paragraph and the sentences around it that speak of the
    question, or the whole list of steps it is one of; and with what it introduces when it ends with a colon. Only
    `free` units are added: none is quoted twice."""
    parts = [unit]
    if unit.kind == ITEM and how_to and unit.marker.strip()[:1].isdigit():
        # A numbered list answers "How do I …?" with its steps: all of them, in order.
        steps = _list_of(unit, candidates)
        parts = steps if steps and all(free(s) or s is unit for s in steps) else parts
    elif unit.kind == SENTENCE:
        paragraph = _paragraph(unit, candidates)
        parts = paragraph if all(free(s) or s is unit for s in paragraph) else parts
        size = sum(len(p.text) + 1 for p in parts)
        while True:
            # The sentence after, then the one before, in the same section, if it too says a word of the question.
            around = [(_neighbour(parts[-1], candidates, 1), len(parts)), (_neighbour(parts[0], candidates, -1), 0)]
            fitting = [
                (neighbour, at)
                for neighbour, at in around
                if neighbour is not None
                and neighbour.kind == SENTENCE
                and neighbour.heading == unit.heading
                and relevant(neighbour)
                and free(neighbour)
                and size + len(neighbour.text) + 1 <= WINDOW_CHARS
            ]
            if not fitting:
                break
            neighbour, at = fitting[0]
            parts.insert(at, neighbour)
            size += len(neighbour.text) + 1
    code = None
    if parts[-1].introduces():
        introduced = _introduced(parts[-1], candidates)
        if introduced is not None and all(free(u) for u in introduced):
            code = introduced[0] if introduced[0].kind == CODE else None
            parts += [] if code else introduced
        elif parts[-1] is not unit:
            # The context's last sentence introduces what is not quoted: it would point at nothing.
            parts.pop()
    elif how_to and parts[-1].kind == SENTENCE:
        # "How do I …?" answered by prose that a short code block follows: the code is the how ("This might be a
        # reasonable first attempt for reading lines from a file." over the function that does it).
        following = _neighbour(parts[-1], candidates, 1)
        if following is not None and following.kind == CODE and fits_code(following.text) and free(following):
            code = following
    text = ""
    for previous, part in zip([None, *parts], parts, strict=False):
        said = f"{part.marker} {part.text}" if part.kind == ITEM and len(parts) > 1 else part.text
        if previous is None:
            text = said
        elif previous.block == part.block:
            text += ("\n" if part.kind == ITEM else " ") + said
        else:
            text += "\n\n" + said
    if code is None:
        return Quote(text, unit.number, parts[0].order, parts=tuple(parts), unit=unit)
    return Quote(text, unit.number, parts[0].order, code.text, code.marker, (*parts, code), unit)


def best_sentences(
    question: str,
    passages: Sequence[SourcePassage],
    earlier: Iterable[str] = (),
    later_first: bool = True,
    today: str = "",
) -> list[Quote]:
    """The quotes, in the order of the notes; none when nothing answers. `earlier` are the conversation's earlier
    answers: what they quoted is quoted again only when nothing else matches. `later_first`: of two dated statements
    alike, the later is quoted (not when the asker named the days: ChatRequest.later_first), up to `today`, the
    asker's day ("" for no bound)."""
    wanted = identifiers(question)
    words = list(dict.fromkeys(keys(word) for word in content_words(question)))
    words += [frozenset({IDENTIFIER + token}) for token in wanted]
    if not words:
        return []
    said = plain(" ".join(earlier))
    candidates: list[Unit] = []
    for rank, passage in enumerate(passages):
        candidates.extend(units(passage, rank, len(candidates), candidates[-1].block if candidates else 0, said))
    if wanted:
        candidates = [dataclasses.replace(c, terms=c.terms | identifier_keys(c.text, wanted)) for c in candidates]

    def relevant(unit: Unit) -> bool:
        return any(word & unit.terms for word in words)

    how_to = bool(_HOW_TO.search(question))
    slot = slot_of(question)
    for tier in (ANSWER, WEAK, ABOUT_THE_VAULT):
        # Code is quoted after the sentence that introduces it, never chosen on its own.
        eligible = [c for c in candidates if c.tier <= tier and c.kind != CODE]
        chosen = _choose(words, eligible, later_first, slot, today)
        quotes: list[Quote] = []
        for unit in chosen:
            taken = [part for quote in quotes for part in quote.parts]

            def free(other: Unit, taken: list[Unit] = taken, tier: int = unit.tier) -> bool:
                # Context is not what other quotes have, nor what the quote itself would not be (an open question,
                # a sentence the conversation quoted already) unless the quote is that too.
                return other.tier <= tier and not any(
                    other.order == t.order or _near_duplicate(other, t) for t in taken
                )

            if free(unit):
                quotes.append(_expand(unit, candidates, how_to, relevant, free))
        if quotes:
            # In the notes' order (the search's, then the note's own), so quotes from one passage read as they do there;
            # a quote holding the value asked for comes first, before the context.
            leads = (
                slot is not None
                and quotes[0].unit is not None
                and holds(slot, quotes[0].text, bool(quotes[0].unit.day))
            )
            rest = sorted(quotes[1:] if leads else quotes, key=lambda quote: quote.order)
            return [quotes[0], *rest] if leads else rest
    return []


def closest_notes(passages: Sequence[SourcePassage]) -> list[str]:
    """`Title [n]` for the first passage of each of the best notes, in the search's order, notes about the vault
    last; at most MAX_NOTES_LISTED."""
    listed: dict[str, str] = {}
    for passage in sorted(passages, key=lambda p: is_about_the_vault(p.path)):
        name = plain(passage.title) or PurePosixPath(plain(passage.path)).stem
        listed.setdefault(passage.path or name or str(passage.number), f"{name} [{passage.number}]".lstrip())
    return list(listed.values())[:MAX_NOTES_LISTED]


def day_opening(passage: SourcePassage) -> Quote | None:
    """The start of `passage` (its first block's first statements), for a question that named its days and nothing
    else the notes could match: "What did I do yesterday?" is answered by what yesterday's note says."""
    found = [unit for unit in units(passage, 0, 0, 0, "") if unit.tier == ANSWER and unit.kind != CODE]
    if not found:
        return None
    opening = [unit for unit in found if unit.block == found[0].block][:DAY_OPENING_UNITS]
    text = " ".join(unit.text for unit in opening)
    return Quote(text, passage.number, opening[0].order, parts=tuple(opening), unit=opening[0])


def _nothing_matches(passages: Sequence[SourcePassage]) -> str:
    notes = closest_notes(passages)
    names = notes[0] if len(notes) == 1 else f"{', '.join(notes[:-1])} and {notes[-1]}"
    found = "the passage" if len(passages) == 1 else f"the {len(passages)} passages"
    closest = "note is" if len(notes) == 1 else "notes are"
    return (
        f" No sentence in {found} I found shares enough words with your question to quote;"
        f" the closest {closest} {names}."
    )


def quoted_only(answer: str) -> str:
    """An answer without what this provider says in its own words (its preamble and connecting sentences): what it
    quoted and the notes it named. Any other answer comes back as it is."""
    return " ".join(_OWN_WORDS.sub(" ", answer).split())


def _days_words(days: str) -> str:
    """ "25 October 2026", or "19 January 2026 to 25 January 2026" for a span (a weekly note)."""
    first, _, last = days.partition("..")
    return " to ".join(day_words(date.fromisoformat(day)) for day in (first, last) if day)


def _render(quote: Quote, dated: bool = False) -> str:
    """A quote as a markdown block quote, its citation after its words, a code block it introduces fenced below;
    `dated`: led by the day the notes date it ("25 October 2026:"), for a question asking when."""
    text = quote.text
    days = quote.unit.days if quote.unit is not None else ""
    lead = f"\n{_days_words(days)}:" if dated and days else ""
    if len(quote.parts) == 1 and len(text) > MAX_QUOTE_CHARS:
        # One statement too long to quote whole (a context is never longer than its limits).
        text = text[:MAX_QUOTE_CHARS].rsplit(" ", 1)[0] + " …"
    lines = [*text.splitlines()]
    lines[-1] += f" [{quote.number}]"
    if quote.code:
        fence = "~~~" if "```" in quote.code else "```"
        lines += ["", f"{fence}{quote.language}", *quote.code.splitlines(), fence]
    return lead + "\n" + "\n".join(f"> {line}".rstrip() for line in lines) + "\n"


class ExtractiveProvider(ChatProvider):
    """Answers by quoting the passages. `chosen`: a model provider is configured too, so quoting was a choice
    (in Settings, a model id on /v1, `--provider`), and the answer says so rather than that no model is configured."""

    def __init__(self, chosen: bool = False) -> None:
        super().__init__(ProviderContext("extractive", "Extractive", base_url="", api_key_env=None, api_key=None))
        self.preamble = CHOSEN_PREAMBLE if chosen else PREAMBLE

    @property
    def no_tools_reason(self) -> str:
        return "the extractive provider quotes the passages and has no model to call tools; choose a model provider"

    async def _stream_once(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        passages = list(request.passages)
        pieces = [self.preamble]
        if not passages:
            pieces.append(NO_PASSAGES)
        else:
            earlier = [m.content for m in request.messages if m.role == "assistant"]
            # Off the event loop: the choice is quick for a question and passages of honest size, but up to a second
            # for a question of a thousand words over a passage of hundreds of sentences.
            quotes = await asyncio.to_thread(
                best_sentences, request.question, passages, earlier, request.later_first, request.today
            )
            opening = None if quotes or request.later_first else day_opening(passages[0])
            if quotes:
                pieces.append(QUOTES_FOLLOW)
                # "When did I last ...?": a quote seldom says its own day, which its note or heading does.
                dated = bool(_WHEN.search(request.question))
                pieces.extend(_render(quote, dated) for quote in quotes)
            elif opening is not None:
                pieces += [DAYS_SAY, _render(opening)]
            else:
                pieces.append(_nothing_matches(passages))
        for piece in pieces:
            yield TextDelta(piece)
        read = request.question + "".join(p.text for p in passages)
        yield Usage(count_tokens(read), count_tokens("".join(pieces)), "end_turn", "extractive")
