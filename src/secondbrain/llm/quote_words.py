"""The words the quoting provider matches a question to a note's sentences on (see `secondbrain.llm.extractive`).

Two kinds: content words, matched on their English stems (Snowball), so "tiles" finds "tile" and "decision" finds
"decided"; and identifiers, the question's bits of code (`{:#?}`, `Role::*`, `into_iter`, `#[derive(Debug)]`),
which have no stem and are matched as written, case aside, anywhere in a sentence.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import snowballstemmer

# Letters and digits; underscores are markdown emphasis (`_word_`), not part of a word.
WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOPWORDS = frozenset(
    line
    for line in (resources.files("secondbrain.llm") / "stopwords.txt").read_text(encoding="utf-8").splitlines()
    if line and not line.startswith("#")
)
_STEMMER = snowballstemmer.stemmer("english")

# An identifier's key starts with a backtick, which no stem does.
IDENTIFIER = "`"
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
# What makes a token code rather than a word: a character prose seldom puts inside a word.
_CODE_CHARACTERS = frozenset(":{}[]()<>#!&*@=./\\|$_+%^~;?,")
# Words that hold one all the same: "multi-line", "don't", "if/else", "Rust's".
_JOINED_WORDS = re.compile(r"[^\W_]+(?:[-'\u2019/][^\W_]+)*")
_QUOTE_MARKS = '"\u201c\u201d\u2018\u2019'
# What ends the question's clause rather than the token: "… instead of {:?}?" is about `{:?}`.
_TRAILING = ",;:.?"


@lru_cache(maxsize=65536)
def keys(word: str) -> frozenset[str]:
    """The stems `word` matches on: its Snowball stem, and for the few derivations Snowball keeps apart that a
    question and a note often split between them, the stem of the related word too."""
    stem = _STEMMER.stemWord(word)
    found = {stem}
    if word.endswith("sion") and stem.endswith("s") and not stem.endswith("ss"):
        found.add(stem[:-1] + "d")  # decision/decide, inclusion/include, extension/extend
    if word.endswith("ician"):
        found.add(_STEMMER.stemWord(word[: -len("ician")] + "ic"))  # electrician/electrics
    if word.endswith("ery") and len(word) > 6:
        found.add(_STEMMER.stemWord(word[:-1]))  # joinery/joiner, delivery/deliver
    return frozenset(found)


def content_words(text: str) -> list[str]:
    """The words of `text`, lowercased, function words dropped."""
    return [word for word in (w.lower() for w in WORD.findall(text)) if word not in _STOPWORDS]


def terms(text: str) -> set[str]:
    """The stems of the content words of `text` (function words dropped)."""
    return {_STEMMER.stemWord(word) for word in content_words(text)}


def key_set(text: str) -> frozenset[str]:
    return frozenset(key for word in content_words(text) for key in keys(word))


def _balanced(token: str) -> str:
    """`token` without an opening or closing bracket it does not close or open: "(like" is "like"."""
    for opening, closing in ("()", "[]", "{}"):
        if token.startswith(opening) and closing not in token:
            token = token[1:]
        if token.endswith(closing) and opening not in token:
            token = token[:-1]
    return token


def identifiers(question: str) -> list[str]:
    """The question's bits of code, lowercased, each once: what it puts in backticks, and the tokens that hold a
    character words do not (`{:#?}`, `Role::*`, `10..1`, `into_iter`, `eprintln!`)."""
    found = [span.strip() for span in _CODE_SPAN.findall(question)]
    for raw in _CODE_SPAN.sub(" ", question).split():
        token = _balanced(raw.strip(_QUOTE_MARKS).rstrip(_TRAILING))
        if len(token) >= 2 and not _CODE_CHARACTERS.isdisjoint(token) and not _JOINED_WORDS.fullmatch(token):
            found.append(token)
    return list(dict.fromkeys(token.lower() for token in found if len(token) >= 2))


def identifier_keys(text: str, wanted: list[str]) -> frozenset[str]:
    """The keys of the identifiers of `wanted` that `text` holds as written (case aside)."""
    lowered = text.lower()
    return frozenset(IDENTIFIER + token for token in wanted if token in lowered)
