"""Related notes (GetRelatedNotes, the reader's side panel and the `related_notes` tool): the notes nearest by meaning
to one note, together with the notes it is linked with and shares links or tags with, weighed into one score, each
with why it is related in words a person reads ("close in meaning; both tagged #garden; links here").

Meaning compares the note's stored passage vectors with the other notes', through the HNSW index
(`store.nearest_notes`): the embedder is not needed, only the index. A note with no vectors yet is still
related by its links and tags, and `meaning_skipped_reason` says why meaning was not.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import asyncpg

from secondbrain.db.embedding_model import current_model
from secondbrain.errors import InvalidInput
from secondbrain.retrieve import store
from secondbrain.retrieve.note_reading import checked_path, named_note, not_found
from secondbrain.retrieve.store.statement import deadline_after

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
TIMEOUT_SECONDS = 10.0

# How meaning is rolled up from passages to notes. For each of up to SAMPLED_CHUNKS of the note's passages (spread
# over the note: each one HNSW scan, the call's main cost, 3-4 ms at 100,000 passages on the loaded 2 cores, so 12
# rather than 16), the PER_SOURCE nearest passages of other notes; another note's similarity is its best one to any of
# the note's passages (the max). The max, rather than a mean over the note's passages: a note is related when some
# part of it is about what some part of this one is about (the stone supplier to the kitchen's worktop section), and a
# mean would bury that under the sections they do not share, and punish a long note for covering more. The max alone
# favours long notes, which have more passages to be near by chance, so how many of the sampled passages found the
# note (its coverage, 0 to 1) adds a little: near to the note as a whole beats near to one line of it.
SAMPLED_CHUNKS = 12
PER_SOURCE = 20
# Below this cosine similarity a note is not counted as near in meaning on its own: every note has nearest
# neighbours, and an unrelated one sits around 0.0-0.25 with the local MiniLM and OpenAI's small model alike, where
# passages about the same thing are 0.4 and up. (Passage to passage, so higher than the search box's query floor.)
MIN_SIMILARITY = 0.3
CLOSE_SIMILARITY = 0.5

# The score: similarity (0 to 1, in practice 0.3 to 0.9 for the notes that pass the floor) is the base, and a human's
# own statement of a relation adds to it. A direct link either way adds 0.25, both ways 0.05 more: enough to lift a
# linked note above unlinked ones of similar meaning, not enough for a link to an unrelated hub to outrank a near
# duplicate. Shared tags and shared links add up to 0.15 each, by their weights (`store.LinkedNote`): a rare
# tag or a link only the two notes make counts most, a tag half the vault carries hardly at all. Coverage adds up to
# 0.05. Only the order is meaningful.
COVERAGE_WEIGHT = 0.05
DIRECT_LINK_WEIGHT = 0.25
BOTH_WAYS_WEIGHT = 0.05
SHARED_TAGS_WEIGHT = 0.15
SHARED_LINKS_WEIGHT = 0.15
# How many shared tags or links a reason names before "and n more".
NAMED_IN_REASON = 2


@dataclass
class RelatedNote:
    path: str
    title: str
    score: float = 0.0
    similarity: float = 0.0
    heading_path: list[str] = field(default_factory=list)
    start_line: int = 0
    end_line: int = 0
    shared_tags: list[str] = field(default_factory=list)
    shared_links: list[str] = field(default_factory=list)
    linked_from_note: bool = False
    links_to_note: bool = False
    reason: str = ""


@dataclass(frozen=True)
class Related:
    path: str
    notes: list[RelatedNote]
    meaning_skipped_reason: str


def checked_limit(limit: int) -> int:
    if not 0 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit is {limit}: ask for 1 to {MAX_LIMIT} related notes, or 0 for {DEFAULT_LIMIT}")
    return limit or DEFAULT_LIMIT


async def related_notes(pool: asyncpg.Pool, path: str, limit: int = 0) -> Related:
    """The notes most related to the note at `path` (or the one it names, as GetNote reads it), best first."""
    path, limit = checked_path(path), checked_limit(limit)
    deadline = deadline_after(TIMEOUT_SECONDS)
    async with pool.acquire(timeout=TIMEOUT_SECONDS) as connection:
        note = await store.note_identity(connection, path)
        if note is None:
            note = await store.note_identity(connection, await named_note(connection, path))
        if note is None:  # deleted between the two reads
            raise not_found(path)

        async def by_links() -> list[store.LinkedNote]:
            async with pool.acquire(timeout=TIMEOUT_SECONDS) as other:
                return await store.linked_notes(other, note.id, deadline)

        # The two halves at once, each on its own connection: the call waits for the slower, not for both. A task
        # group, so a failure of one cancels the other before its connection goes back to the pool.
        try:
            async with asyncio.TaskGroup() as group:
                meaning = group.create_task(_by_meaning(connection, note, deadline))
                links = group.create_task(by_links())
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None
    near, skipped = meaning.result()
    return Related(note.path, combined(note, near, links.result(), limit), skipped)


async def _by_meaning(
    connection: asyncpg.Connection, note: store.NoteIdentity, deadline: float | None
) -> tuple[list[store.NearNote], str]:
    """The notes near `note` in meaning, or none and why."""
    model = await current_model(connection)
    if model is None:
        return [], "nothing has been embedded yet: sync the vault, and notes near in meaning will show"
    have = await store.vectors(connection, note.id, model.dimension)
    if have.chunks == 0:
        return [], "this note has no text to compare by meaning"
    if have.embedded == 0:
        return [], (
            f"this note has no vectors of {model.identity} yet (it is waiting to be embedded): it is related by its "
            "links and tags until a sync embeds it"
        )
    near = await store.nearest_notes(
        connection, note.id, model.dimension, sources=SAMPLED_CHUNKS, per_source=PER_SOURCE, deadline=deadline
    )
    return near, ""


def combined(
    note: store.NoteIdentity, near: list[store.NearNote], linked: list[store.LinkedNote], limit: int
) -> list[RelatedNote]:
    """Both kinds of relation of each other note, scored and explained; the best `limit`, ties by path."""
    spelled = {tag.lower(): tag for tag in note.tags}  # shared tags as the note asked about writes them
    notes: dict[str, RelatedNote] = {}
    for found in near:
        if found.similarity < MIN_SIMILARITY:
            continue  # a neighbour by chance: no relation, and no part of another relation's score
        related = notes.setdefault(found.path, RelatedNote(found.path, found.title))
        related.similarity = found.similarity
        related.heading_path = found.heading_path
        related.start_line, related.end_line = found.start_line, found.end_line
        related.score += found.similarity + COVERAGE_WEIGHT * found.sources / max(found.sampled, 1)
    for link in linked:
        related = notes.setdefault(link.path, RelatedNote(link.path, link.title))
        related.linked_from_note, related.links_to_note = link.linked_from_note, link.links_to_note
        related.shared_tags = [spelled.get(tag, tag) for tag in link.shared_tags]
        related.shared_links = link.shared_links
        related.score += (
            DIRECT_LINK_WEIGHT * (link.linked_from_note or link.links_to_note)
            + BOTH_WAYS_WEIGHT * (link.linked_from_note and link.links_to_note)
            + SHARED_TAGS_WEIGHT * min(link.tag_weight, 1.0)
            + SHARED_LINKS_WEIGHT * min(link.link_weight, 1.0)
        )
    kept = list(notes.values())
    for related in kept:
        related.reason = reason(related)
    kept.sort(key=lambda related: (-related.score, related.path))
    return kept[:limit]


def reason(related: RelatedNote) -> str:
    """Why `related` is related, as a person reads it: "close in meaning (Soil); both tagged #garden; links here"."""
    parts: list[str] = []
    if related.similarity:
        closeness = "close in meaning" if related.similarity >= CLOSE_SIMILARITY else "somewhat close in meaning"
        section = related.heading_path[-1] if related.heading_path else ""
        parts.append(f"{closeness} ({section})" if section and section != related.title else closeness)
    if related.shared_tags:
        parts.append("both tagged " + _some(["#" + tag for tag in related.shared_tags]))
    if related.shared_links:
        parts.append("both link to " + _some([PurePosixPath(path).stem for path in related.shared_links]))
    if related.linked_from_note and related.links_to_note:
        parts.append("linked both ways")
    elif related.links_to_note:
        parts.append("links here")
    elif related.linked_from_note:
        parts.append("linked from here")
    return "; ".join(parts)


def _some(names: list[str]) -> str:
    """`names` as a phrase: "a", "a and b", "a, b and 3 more"."""
    if len(names) <= NAMED_IN_REASON:
        return " and ".join(names)
    return f"{', '.join(names[:NAMED_IN_REASON])} and {len(names) - NAMED_IN_REASON} more"
