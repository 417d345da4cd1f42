"""The code a question quotes: identifiers, shortcuts and syntax that a chunk either contains verbatim or does not.

`pub(crate)`, `Rc::downgrade`, `#[should_panic]`, `iter().any(...)`, `Ctrl+Shift+F`, `![[image.png]]`, `--continuous`,
`read_lines`: the full-text parser splits these at their punctuation and drops what it splits on (`pub(crate)` becomes
"pub" and "crate", found all over a Rust book; `iter().any(` loses "any" as a stop word). A chunk that contains the
question's code as written is evidence the words alone do not give, and hybrid fusion adds it (see
`secondbrain.retrieve.fusion`).

A token is code when, once sentence punctuation and unbalanced brackets are trimmed from its ends, it has a character
the parser splits on or drops (brackets, `::`, `#`, `!`, `&`, `_`, `+`, `|`, `=`, `$`, ...) or begins with a dash and
a letter (`--continuous`, `-C`); a span in backticks counts as one token. What the parser keeps whole is left to BM25,
which already matches it exactly: names of letters and digits (`u64`, `FnMut`, `E0597`, `p53`), dotted names and
numbers (`node.js`, `1.5`). Counting those too gained on Rust by Example and cost SciFact's test split (the retrieval
tuning log in docs/benchmarks.md). Plain words in backticks ("as", "type") are left to BM25 as well: as substrings
they match everywhere.
"""

from __future__ import annotations

import re

# At most this many tokens are matched: a pasted stack trace is not a list of identifiers to look for one by one.
MAX_TOKENS = 8
# A token this long is a pasted line, matched verbatim only if it is there whole.
MAX_TOKEN_CHARS = 200

_CODE = re.compile(r"[()\[\]{}<>:!#&_+|=\\@$%*^~]|^--?[A-Za-z]")
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
