"""Whether a chat message refers back to the conversation, or stands alone: the rule used when no language model
condenses it.

With no model, a message that refers back ("and for an enum?", "can it take any number of arguments?", "why?") is
searched twice, as typed and joined with the turns before it (condense.with_earlier_turns), because its subject is
in the conversation. A message that stands alone ("How much did the kitchen cost in the end?" after a talk about
tomatoes) is searched as typed only: joined with the tomato talk, it would find tomato notes.

The rule reads the message, and of the conversation only which words it shares with it; it says why in words
(`Reference.reason`), which the plan shows. A message refers back when any of these holds, checked in this order:

1. It is too short to stand alone: at most `SHORT_CONTENT_WORDS` content words ("why?", "and the hotel?", "which one
   is the default?").
2. It opens by carrying on from the last turn: "what about ...", "how about ..." whatever follows, or "and", "or",
   "but", "then" in a first sentence of at most `SIGNAL_CONTENT_WORDS` content words ("and for PDFs? can I ...",
   "and how late was the flight that day?"). A long message that opens with "and" names its own subject ("And how
   do arrays differ from slices when it comes to their length?").
3. It has a word that stands for something named elsewhere, and the message does not name it first:
   - "one" standing for a noun ("the second one", "one of those"), "the same" without "as", "instead" without "of",
     "afterwards", and "then" as its last word, wherever they are;
   - "it", "they", "them", "this", "that", "these", "those", "he", "she" (and their other forms) before any content
     word ("can it ...", "does that explain ...");
   - such a pronoun after content words, in a message of at most `SIGNAL_CONTENT_WORDS` of them ("how do I move it
     somewhere else on my disk?"): a longer message is taken to name what the pronoun stands for ("When I rename a
     note, do the links pointing to it get fixed automatically?").
   "That" right after a content word is mostly "which" ("a conversion that can fail"), and "this" before a span of
   time ("this year") is about now: neither is a reference here.
4. It shares a content word (by its stem) with the turns it would be joined with: it carries on their subject ("would
   my databases survive with the zip method?" after an answer about a zip export), and joined with them it finds
   the same notes. The turns that hurt a standalone question are the unrelated ones, which share none of its words.

Content words are the words minus function words (`_FUNCTION`: articles, pronouns, auxiliaries,
prepositions, question words, and a few light verbs and adverbs such as "do", "get", "make", "actually", "later"),
after any opening "ok", "thanks", "hmm". Anything else stands alone. The rule was chosen on the blind standalone and
follow-up dev sets, not on their test sets (docs/benchmarks.md, "Standalone questions in a conversation").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import snowballstemmer

# At most this many content words: too short to stand alone ("why?", "and a tweet?", "what colour did we pick?").
SHORT_CONTENT_WORDS = 2
# A message that opens with "and", "or", "but" or "then", or has a pronoun that could stand for a word of its own,
# refers back when it names at most this many things (content words); with more, it carries its own subject.
SIGNAL_CONTENT_WORDS = 3
# A message with no such sign still carries on the conversation's subject when it shares this many content words
# (by stem) with the turns it would be joined with (2 was tried on the dev sets too: docs/benchmarks.md).
SHARED_WORDS = 1

_WORD = re.compile(r"[a-z0-9]+")
_STEMMER = snowballstemmer.stemmer("english")
# Where a sentence ends: the carry-on rule reads the first one ("and for PDFs? can i make it open on a page").
_SENTENCE_END = re.compile(r"[.?!]+(?:\s|$)")


def _listed(text: str) -> frozenset[str]:
    """A word list written as prose: the words of `text`."""
    return frozenset(text.split())


# Words a message may open with that say nothing about its subject ("ok", "thanks!", "hmm,").
_OPENERS = _listed(
    "ok okay k cool thanks thank thx ty nice great hmm hm oh ah aha right alright sure yes yeah yep no nope "
    "so well hey hi hello perfect awesome got gotcha wow interesting good fine understood lovely brilliant also"
)
# An opening that picks up the last turn's question whatever follows.
_CARRY_ON_ALWAYS = (("what", "about"), ("how", "about"))
# An opening that picks it up when the first sentence is short.
_CARRY_ON = _listed("and or but then")

# Words that stand for something named elsewhere.
_PRONOUNS = _listed("it its itself they them their theirs themselves he him his she her hers this these those that")
# "this" before one of these is about now, not about an earlier turn ("this year").
_TIME = _listed("year week month morning evening afternoon time weekend season quarter spring summer autumn winter")
# "one" after these is not a pronoun standing for a noun ("no one", "every one of my notes").
_NOT_PRONOUN_ONE = _listed("no every each any some")

# Function words: not content, so neither a referent for a pronoun nor a word that makes a message long.
_FUNCTION = _listed(
    """
    a an the and or but if then so as than of to in on at by for from with without into onto about over under
    up down out off between through across around inside outside within via per after before during until while
    once again also too very just only even still ever already actually really maybe perhaps later else
    somewhere anywhere now here there where when what which who whom whose why how whether
    i me my mine myself we us our ours you your yours it its they them their he him his she her this that these
    those one ones some any all each every both either neither other another same such own no not
    much many more most few less lot lots
    is am are was were be been being do does did doing done have has had having can could will would shall
    should may might must let lets get gets got getting make makes made use used using put want wanted need
    needs try tried keep go goes going come take give work set see say tell know mean like
    s t d ll re ve m don doesn didn isn aren wasn weren can cannot won wouldn shouldn couldn im ive
    thing things way something anything
    please thanks ok okay
    """
)


@dataclass(frozen=True)
class Reference:
    """Whether a message refers back, and why, in words a person reads in the plan."""

    refers_back: bool
    reason: str


def words(message: str) -> list[str]:
    """The message's words, lowercased; "that's" is "that", "s"."""
    return _WORD.findall(message.casefold())


def content_words(tokens: list[str]) -> list[str]:
    return [w for w in tokens if w not in _FUNCTION]


def _without_openers(tokens: list[str]) -> list[str]:
    start = 0
    while start < len(tokens) and tokens[start] in _OPENERS:
        start += 1
    return tokens[start:]


def _reference_word(tokens: list[str]) -> tuple[str, bool]:
    """The first word of `tokens` that stands for something named elsewhere, and whether the message cannot have
    named it (see rule 3 of the module's docstring); ('', False) when there is none."""
    named = False
    found = ""
    for i, word in enumerate(tokens):
        before = tokens[i - 1] if i else ""
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if word in ("one", "ones") and (not after or after in _FUNCTION) and before not in _NOT_PRONOUN_ONE:
            return word, True
        if word == "same" and before == "the" and "as" not in tokens[i + 1 :]:
            return "the same", True
        if (
            (word == "instead" and after != "of")
            or word in ("afterwards", "afterward")
            or (word == "then" and not after)
        ):
            return word, True
        if word in _PRONOUNS and not (word == "this" and after in _TIME):
            if not named:
                return word, True
            found = found or word
        if word not in _FUNCTION:
            named = True
    return found, False


def _shared_words(content: list[str], conversation: str) -> list[str]:
    """The message's content words whose stem a content word of `conversation` has too, each stem once."""
    earlier = {_STEMMER.stemWord(w) for w in content_words(words(conversation))}
    shared: dict[str, str] = {}
    for word in content:
        stem = _STEMMER.stemWord(word)
        if stem in earlier:
            shared.setdefault(stem, word)
    return list(shared.values())


def reference(message: str, conversation: str = "") -> Reference:
    """Whether `message` refers back to `conversation`, the earlier turns it would be joined with (see the module's
    docstring for the rule)."""
    tokens = _without_openers(words(message))
    content = content_words(tokens)
    if len(content) <= SHORT_CONTENT_WORDS:
        count = "no content words" if not content else f"{len(content)} content word{'s' * (len(content) > 1)}"
        return Reference(True, f"refers back: too short to stand alone ({count})")
    for first, second in _CARRY_ON_ALWAYS:
        if tokens[:2] == [first, second] or (tokens[0] in _CARRY_ON and tokens[1:3] == [first, second]):
            return Reference(True, f"refers back: it opens with '{first} {second}'")
    if tokens[0] in _CARRY_ON:
        opening = _without_openers(words(_SENTENCE_END.split(message.strip(), maxsplit=1)[0]))
        if len(content_words(opening)) <= SIGNAL_CONTENT_WORDS:
            return Reference(True, f"refers back: it opens with '{tokens[0]}' and names little")
    word, unresolved = _reference_word(tokens)
    if word and (unresolved or len(content) <= SIGNAL_CONTENT_WORDS):
        return Reference(True, f"refers back: '{word}'")
    shared = _shared_words(content, conversation)
    if len(shared) >= SHARED_WORDS:
        listed = "', '".join(shared)
        return Reference(True, f"refers back: it shares '{listed}' with the conversation")
    return Reference(False, "stands alone")
