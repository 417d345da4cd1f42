"""All of the retrieve service's SQL, in one place, each name re-exported here so the service reads
`store.hybrid_candidates` whatever module holds it.

- `hybrid`: the chunk-level hybrid statement a chat turn's retrieval runs per query (BM25 and vector arms, fused).
- `chunks`: the ranked chunks read back, with their neighbours, and the best chunks of linked notes.
- `notes`: the note-level search box's statements (lexical, vector, hybrid).
- `note_reads`: what the index holds of notes, read for the note tools and the reader: a note's body, a list, its
  links both ways, the facets to browse by.
- `questions`: what suggested questions are drawn from: recent notes with their headings, and the index's mark.
- `related`: related notes: the notes nearest a note's passages by meaning (HNSW), and its links and shared tags.
- `statement`: what they all share: the one parameter builder (no statement numbers its `$n` by hand), the filter
  clause, LIKE escaping, and running a statement within a deadline, the vector arm's HNSW settings scoped to it.
"""

from secondbrain.retrieve.store.chunks import ChunkRow, chunk_contents, chunk_dates, chunks_around, linked_candidates
from secondbrain.retrieve.store.hybrid import LexicalQuery, candidates_statement, hybrid_candidates
from secondbrain.retrieve.store.note_reads import (
    Facets,
    ListedNote,
    StoredLink,
    StoredNote,
    facets,
    get_note,
    list_notes,
    note_links,
    notes_named,
)
from secondbrain.retrieve.store.notes import (
    MATCH_START,
    MATCH_STOP,
    fetch_notes,
    hybrid_notes_statement,
    lexical_notes_statement,
    vector_notes_statement,
)
from secondbrain.retrieve.store.questions import SourceNote, index_mark, recent_notes
from secondbrain.retrieve.store.related import (
    LinkedNote,
    NearNote,
    NoteIdentity,
    Vectors,
    linked_notes,
    nearest_notes,
    note_identity,
    vectors,
)
from secondbrain.retrieve.store.statement import HNSW_EF_SEARCH, Params, Statement, fetch

__all__ = [
    "HNSW_EF_SEARCH",
    "MATCH_START",
    "MATCH_STOP",
    "ChunkRow",
    "Facets",
    "LexicalQuery",
    "LinkedNote",
    "ListedNote",
    "NearNote",
    "NoteIdentity",
    "Params",
    "SourceNote",
    "Statement",
    "StoredLink",
    "StoredNote",
    "Vectors",
    "candidates_statement",
    "chunk_contents",
    "chunk_dates",
    "chunks_around",
    "facets",
    "fetch",
    "fetch_notes",
    "get_note",
    "hybrid_candidates",
    "hybrid_notes_statement",
    "index_mark",
    "lexical_notes_statement",
    "linked_candidates",
    "linked_notes",
    "list_notes",
    "nearest_notes",
    "note_identity",
    "note_links",
    "notes_named",
    "recent_notes",
    "vector_notes_statement",
    "vectors",
]
