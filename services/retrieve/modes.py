"""One vocabulary for the arms a search runs, in code, the CLI and the UI: `lexical` (BM25 and full-text matching),
`vector` (embedding similarity) and `hybrid` (both, fused by reciprocal rank fusion).

The protos keep their enum names, since renaming them would break clients. `RetrievalMode` (the Retrieve RPC) says
LEXICAL, VECTOR and HYBRID, as here; `SearchMode` (the Search RPC, the note-level search box) says KEYWORD for
lexical and SEMANTIC for vector: the servicer's `SEARCH_MODES` is where those become these.
"""

from __future__ import annotations

from typing import Literal, get_args

from secondbrain.errors import InvalidInput

Mode = Literal["hybrid", "lexical", "vector"]
MODES: tuple[Mode, ...] = get_args(Mode)


def mode_named(name: str) -> Mode:
    """The mode `name` stands for; InvalidInput for anything else."""
    if name in MODES:
        return name  # type: ignore[return-value]
    raise InvalidInput(f"unknown search mode {name!r}: use lexical, vector or hybrid")
