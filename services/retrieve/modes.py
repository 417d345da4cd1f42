"""One vocabulary for the arms a search runs, in code, the CLI and the UI: `lexical` (BM25 and full-text matching),
`vector` (embedding similarity) and `hybrid` (both, fused by reciprocal rank fusion).

The protos keep their enum names, since renaming them would break clients. `RetrievalMode` (the Retrieve RPC) says
LEXICAL, VECTOR and HYBRID, as here; `SearchMode` (the Search RPC, the note-level search box) says KEYWORD for
lexical and SEMANTIC for vector, and the servicer passes those words on: `mode_named` is where they become these.
"""

from __future__ import annotations

from typing import Literal, get_args

from secondbrain.errors import InvalidInput

Mode = Literal["hybrid", "lexical", "vector"]
MODES: tuple[Mode, ...] = get_args(Mode)

# The Search RPC's words for the arms (SEARCH_MODE_KEYWORD, SEARCH_MODE_SEMANTIC), as the servicer passes them.
SEARCH_RPC_WORDS: dict[str, Mode] = {"keyword": "lexical", "semantic": "vector"}


def mode_named(name: str) -> Mode:
    """The mode `name` stands for, in this vocabulary or the Search RPC's; InvalidInput for anything else."""
    if name in MODES:
        return name  # type: ignore[return-value]
    if name in SEARCH_RPC_WORDS:
        return SEARCH_RPC_WORDS[name]
    raise InvalidInput(f"unknown search mode {name!r}: use lexical, vector or hybrid")
