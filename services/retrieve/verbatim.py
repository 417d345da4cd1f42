"""The code a question quotes: identifiers, shortcuts and syntax that a chunk either contains verbatim or does not.

`pub(crate)`, `Rc::downgrade`, `#[should_panic]`, `iter().any(...)`, `Ctrl+Shift+F`, `![[image.png]]`, `--continuous`,
`E0597`, `u64`, `FnMut`: the full-text index reads these as words and loses what makes them exact (its parser splits
`pub(crate)` into "pub" and "crate", found all over a Rust book, and drops "any" as a stop word). A chunk that contains
the question's code as written is evidence the words alone do not give, and hybrid fusion adds it (see
`secondbrain.retrieve.fusion`).

A token is code when, once sentence punctuation and unbalanced brackets are trimmed from its ends, it has a
character that prose does not put inside a word (brackets, `::`, `#`, `!`, `&`, `_`, `+`, `|`, `=`, `$`, ...), a dot
or digit inside letters (`file.hasTag`, `node.js`, `u64`, `E0597`), a lower-case letter followed by a capital
(`FnMut`, `hasTag`), or begins with a dash and a letter (`--continuous`, `-C`); or it is `quoted in backticks`.
Plain words ("as", "type") are left to the full-text arm even in backticks: as substrings they match everywhere.
"""

from __future__ import annotations

import re

# At most this many tokens are matched: a pasted stack trace is not a list of identifiers to look for one by one.
MAX_TOKENS = 8
# A token this long is a pasted line, matched verbatim only if it is there whole.
MAX_TOKEN_CHARS = 200

_CODE = re.compile(r"[()\[\]{}<>:!#&_+|=\\@$%*^~]|^--?[A-Za-z]|\w\.\w|[a-z][A-Z]|[A-Za-z]\d|\d[A-Za-z]")
_BACKTICKS = re.compile(r"`([^`\n]+)`")
_BRACKETS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_TRAILING = ",;?\"'"


def code_tokens(question: str) -> tuple[str, ...]:
    """The question's code tokens, lower-cased (matched case-insensitively), in order, each once (at most
    MAX_TOKENS)."""
    spans = [span.strip() for span in _BACKTICKS.findall(question)]
    pieces = [_trimmed(piece) for piece in _BACKTICKS.sub(" ", question).split()]
    found = [
        token.lower()
        for token in (*spans, *pieces)
        if 2 <= len(token) <= MAX_TOKEN_CHARS and re.search(r"\w", token) and _CODE.search(token)
    ]
    return tuple(dict.fromkeys(found))[:MAX_TOKENS]


def _trimmed(piece: str) -> str:
    """A whitespace-separated piece of a question without the sentence punctuation or unbalanced brackets at its
    ends ("(pub(crate)," is "pub(crate)"; "Rc::clone." is "Rc::clone"; "macro_rules!" keeps its "!")."""
    while True:
        before = piece
        piece = piece.strip(_TRAILING)
        if piece.endswith(":") and not piece.endswith("::"):
            piece = piece[:-1]
        if piece.endswith(".") and not piece.endswith(".."):
            piece = piece[:-1]
        for opening, closing in _BRACKETS.items():
            if piece.startswith(opening) and piece.count(opening) > piece.count(closing):
                piece = piece[1:]
            if piece.endswith(closing) and piece.count(closing) > piece.count(opening):
                piece = piece[:-1]
            if piece.startswith(opening) and piece.endswith(closing) and piece.count(opening) == 1:
                piece = piece[1:-1]
        if piece == before:
            return piece


def pattern(token: str) -> str:
    """A regular expression (PostgreSQL's, matched case-insensitively) for `token` as written, not inside a longer
    word: `u64` is not found in `u640`, nor `FnMut` in `FnMutable`. Every character that is not a letter or digit is
    escaped, which both Python and PostgreSQL read as that character itself."""
    body = "".join(c if c.isalnum() else "\\" + c for c in token)
    before = r"(?<!\w)" if token[0].isalnum() or token[0] == "_" else ""
    after = r"(?!\w)" if token[-1].isalnum() or token[-1] == "_" else ""
    return before + body + after
