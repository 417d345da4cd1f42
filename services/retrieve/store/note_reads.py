"""Reading what the index holds of notes, for the note tools: one note's body, a list of notes, a note's wikilinks
both ways. Only what ingest stored is read, never a file: a path the index does not hold is simply not found.

A note is readable once it has content in the index: indexed or waiting for its vectors, or failed after an earlier
version was indexed (that version stays, as it does for search). A file that failed before it was ever indexed has
nothing to read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import asyncpg

from secondbrain.date_sources import MODIFIED, span_text
from secondbrain.file_kinds import FILTER_TYPES
from secondbrain.retrieve.filters import Filters
from secondbrain.retrieve.store.statement import Params, fetch, link_names, link_resolves

# A `vault_files` row `f` with content to read (the module's docstring says which).
READABLE = "(f.status <> 'failed' OR f.body <> '')"


@dataclass(frozen=True)
class StoredNote:
    path: str
    title: str
    body: str
    # The file line the body starts on; None for a note stored before it was recorded (until the next sync).
    body_start_line: int | None
    tags: list[str]
    aliases: list[str]
    # Its front matter as a JSON object ("{}" for none): jsonb's text, so its keys are in jsonb's order (shorter keys
    # first), not the file's: the index keeps no other copy of the front matter.
    properties_json: str = "{}"
    # The days it is from ("2026-01-20", "2026-01-19..2026-01-25") and where that was read; "" not dated yet.
    date: str = ""
    date_source: str = ""


@dataclass(frozen=True)
class ListedNote:
    path: str
    title: str
    tags: list[str]
    # Lines in the body, and the file line it starts on (1 when not known yet).
    body_lines: int
    body_start_line: int
    # The days it is from ("2026-01-20", "2026-01-19..2026-01-25") and where that was read; "" not dated yet.
    date: str = ""
    date_source: str = ""

    @property
    def last_line(self) -> int:
        return self.body_start_line + self.body_lines - 1


@dataclass(frozen=True)
class StoredLink:
    # The note at the other end: the linked note (outgoing) or the linking one (backlinks); None when an outgoing
    # link names no indexed note.
    path: str | None
    target: str
    heading: str
    line: int
    is_embed: bool


async def get_note(connection: asyncpg.Connection, path: str) -> StoredNote | None:
    row = await connection.fetchrow(
        f"""
        SELECT path, title, body, body_start_line, tags, aliases, frontmatter::text AS properties,
               date_start, date_end, date_source
        FROM vault_files f WHERE path = $1 AND {READABLE}
        """,
        path,
    )
    if row is None:
        return None
    return StoredNote(
        row["path"], row["title"], row["body"], row["body_start_line"], list(row["tags"]), list(row["aliases"]),
        row["properties"], span_text(row["date_start"], row["date_end"]), row["date_source"],
    )  # fmt: skip


async def notes_named(connection: asyncpg.Connection, name: str, limit: int = 5) -> list[str]:
    """The readable notes `name` names as Obsidian resolves a wikilink (path with or without `.md`, file name, title
    or alias, in any case), by path: for a read given a note's wikilink form, or a path in the wrong case."""
    target = name[:-3] if name.lower().endswith(".md") else name
    rows = await connection.fetch(
        f"""
        SELECT f.path FROM vault_files f, (SELECT $1::text AS target) l
        WHERE {link_resolves("f", "l")} AND {READABLE}
        ORDER BY f.path LIMIT $2
        """,
        target,
        limit,
    )
    return [row["path"] for row in rows]


# The orders of a list of notes. "own date": newest first by the newest day a passage of the note is dated by the note
# itself (its file name, front matter or a dated heading; not its file's modification time), within the filters' date
# range when they have one, so a log listed for its January entry sorts by that entry; the notes with no such day
# after, by path.
ORDERS = ("path", "newest", "own date")


def _order_by(p: Params, order: str, filters: Filters) -> str:
    if order == "newest":
        return "date_end DESC NULLS LAST, path"
    if order != "own date":
        return "path"
    in_range = "true"
    if filters.date_from or filters.date_to:
        in_range = p.filters(Filters(date_from=filters.date_from, date_to=filters.date_to), "f", "c")
    return f"""(SELECT max(c.date_end) FROM vault_chunks c
                  WHERE c.file_id = f.id AND c.date_source <> {p.add(MODIFIED)} AND {in_range}) DESC NULLS LAST,
                 path"""


async def list_notes(
    connection: asyncpg.Connection, filters: Filters, limit: int, order: str = "path"
) -> tuple[list[ListedNote], int]:
    """Up to `limit` notes the filters let through, in `order` (one of ORDERS: by path, newest first by the note's
    date, or newest first by its own dates), and how many there are in all."""
    p = Params()
    where = f"{READABLE} AND {p.filters(filters, 'f')}"
    limit_p = p.add(limit)
    order_by = _order_by(p, order, filters)
    statement = p.statement(f"""
        SELECT path, title, tags,
               -- Lines as GetNote counts them: a final newline ends the last line rather than starting one.
               length(body) - length(replace(body, E'\\n', '')) + 1 - (body LIKE E'%\\n')::int AS body_lines,
               coalesce(body_start_line, 1) AS body_start_line, count(*) OVER () AS total,
               date_start, date_end, date_source
        FROM vault_files f
        WHERE {where}
        ORDER BY {order_by}
        LIMIT {limit_p}
        """)
    rows = await fetch(connection, statement, vector_scan=False)
    notes = [
        ListedNote(
            r["path"], r["title"], list(r["tags"]), r["body_lines"] or 1, r["body_start_line"],
            span_text(r["date_start"], r["date_end"]), r["date_source"],
        )
        for r in rows
    ]  # fmt: skip
    if rows:
        return notes, int(rows[0]["total"])
    # Past the end of a short list (limit 0 is not asked for): count alone.
    count = Params()
    total = await connection.fetchval(
        f"SELECT count(*) FROM vault_files f WHERE {READABLE} AND {count.filters(filters, 'f')}", *count.values
    )
    return notes, int(total)


@dataclass(frozen=True)
class Facets:
    """What the readable notes the filters let through can be browsed by: (value, notes) pairs."""

    folders: list[tuple[str, int]]
    tags: list[tuple[str, int]]
    days: list[tuple[str, int]]
    notes: int
    undated_notes: int
    # (type of file as a filter names it, files), in file_kinds.FILTER_TYPES's order.
    file_types: list[tuple[str, int]] = field(default_factory=list)


# One statement reads the notes once (`counted`, materialized: the filters' EXISTS over chunks runs once per note) and
# counts each facet from it; each row is (facet, value, count). At 10,000 notes it is tens of milliseconds. A folder
# counts every note under it, subfolders included: a note counts once in each of its ancestor folders. A tag counts the
# notes carrying it or a child of it, once per note however many of its children the note has, so every ancestor of a
# nested tag is listed ('project' for 'project/kitchen' alone); tags differing only in case are one tag (as filters and
# Obsidian match them), shown in their most common spelling. A note spanning days counts on its last. Reading `body`
# would detoast whole notes: only the columns counted are read, and `body` only for a failed note (`READABLE`).
_FACETS = r"""
    WITH counted AS MATERIALIZED (
        -- A note's own date only (its file name, front matter or dated headings): the file's modification time
        -- says when it was last edited, not what day it is about, so such a note is counted as undated.
        SELECT f.id, f.path, f.tags, CASE WHEN f.date_source = {modified} THEN NULL ELSE f.date_end END
               AS date_end
        FROM vault_files f WHERE {readable} AND {where}
    ),
    -- Each note's own folder, counted; then each of those folders and its parents, summed (a note is in one folder,
    -- so no note counts twice in a parent), worked out once per folder rather than once per note.
    note_folders AS (
        SELECT left(path, length(path) - strpos(reverse(path), '/')) COLLATE "C" AS folder, count(*) AS notes
        FROM counted WHERE strpos(path, '/') > 0
        GROUP BY 1
    ),
    folders AS (
        SELECT array_to_string(parts[1:depth], '/') COLLATE "C" AS value, sum(notes) AS notes
        FROM (SELECT string_to_array(folder, '/') AS parts, notes FROM note_folders) n
        CROSS JOIN LATERAL generate_series(1, cardinality(parts)) AS depth
        GROUP BY 1
    ),
    -- Each note's tags; then each distinct tag's prefixes (itself and its parents, as it spells them) and their
    -- lower-case key, worked out once per tag rather than once per note: a vault has far fewer tags than tagged notes.
    -- Tags are compared in byte order ("C"): only equality matters, and it sorts far faster than a language's order.
    note_tags AS MATERIALIZED (
        SELECT DISTINCT n.id, trim(BOTH '/' FROM tag) COLLATE "C" AS spelled
        FROM counted n CROSS JOIN LATERAL unnest(n.tags) AS tag
    ),
    spellings AS MATERIALIZED (
        SELECT s.spelled, array_to_string(s.parts[1:depth], '/') COLLATE "C" AS value,
               lower(array_to_string(s.parts[1:depth], '/')) COLLATE "C" AS key
        FROM (SELECT spelled, string_to_array(spelled, '/') AS parts FROM (SELECT DISTINCT spelled FROM note_tags) d) s
        CROSS JOIN LATERAL generate_series(1, cardinality(s.parts)) AS depth
    ),
    tag_prefixes AS (
        SELECT t.id, p.key, p.value FROM note_tags t JOIN spellings p USING (spelled) WHERE p.value <> ''
    ),
    tags AS (
        -- On a tie, the spelling last in byte order: lower case ('budget' before 'Budget').
        SELECT mode() WITHIN GROUP (ORDER BY value DESC) AS value, count(DISTINCT id) AS notes
        FROM tag_prefixes GROUP BY key
    )
    SELECT 'folder' AS facet, value, notes FROM folders
    UNION ALL SELECT 'tag', value, notes FROM tags
    UNION ALL SELECT 'day', date_end::text, count(*) FROM counted WHERE date_end IS NOT NULL GROUP BY date_end
    UNION ALL SELECT 'notes', '', count(*) FROM counted
    UNION ALL SELECT 'undated', '', count(*) FROM counted WHERE date_end IS NULL
    UNION ALL SELECT 'suffix', lower(substring(path FROM '\.[^./]*$')), count(*) FROM counted GROUP BY 2
"""


async def facets(connection: asyncpg.Connection, filters: Filters, deadline: float | None = None) -> Facets:
    """The folders, tags and days of the readable notes `filters` lets through, each with its notes, and how many
    notes were counted and how many have no date yet. Folders and tags by value, days oldest first."""
    p = Params()
    where = p.filters(filters, "f")
    statement = p.statement(_FACETS.format(readable=READABLE, where=where, modified=p.add(MODIFIED)))
    rows = await fetch(connection, statement, vector_scan=False, deadline=deadline)
    by_facet: dict[str, list[tuple[str, int]]] = {
        "folder": [], "tag": [], "day": [], "notes": [], "undated": [], "suffix": []
    }  # fmt: skip
    for row in rows:
        by_facet[row["facet"]].append((row["value"], int(row["notes"])))
    # Sorted here rather than by a collation: Python's code-point order is the same on every database.
    return Facets(
        folders=sorted(by_facet["folder"]),
        tags=sorted(by_facet["tag"], key=lambda tag: (tag[0].lower(), tag[0])),
        days=sorted(by_facet["day"]),
        notes=by_facet["notes"][0][1],
        undated_notes=by_facet["undated"][0][1],
        file_types=_file_types(by_facet["suffix"]),
    )


def _file_types(suffixes: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Files counted by extension, summed by the type a filter names them by (jpg and png are both images)."""
    counts = dict(suffixes)
    found = [(kind, sum(counts.get(suffix, 0) for suffix in chosen)) for kind, chosen in FILTER_TYPES.items()]
    return [(kind, count) for kind, count in found if count]


async def note_links(connection: asyncpg.Connection, path: str) -> tuple[list[StoredLink], list[StoredLink]] | None:
    """A readable note's wikilinks in order (each with the note it names, if indexed) and the links to it from other
    notes (by linking note, then line); None when the index holds no such note."""
    file_id = await connection.fetchval(f"SELECT id FROM vault_files f WHERE path = $1 AND {READABLE}", path)
    if file_id is None:
        return None
    # Each link's note by name (`link_names`, the names `link_resolves` matches), the first by path when several
    # answer to it: one pass over the notes' names, joined by equality, rather than every link tested against every
    # note (a 47-link note of a 10,000-note vault would be half a million tests).
    outgoing = await connection.fetch(
        f"""
        WITH links AS MATERIALIZED (
            SELECT ordinal, target, heading, line, is_embed, lower(target) AS name FROM vault_links WHERE file_id = $1
        ),
        named AS (
            SELECT f.path, name
            FROM vault_files f CROSS JOIN LATERAL unnest({link_names("f")}) AS name
            WHERE {READABLE} AND name IN (SELECT name FROM links)
        )
        SELECT l.target, l.heading, l.line, l.is_embed, min(n.path) AS path
        FROM links l LEFT JOIN named n ON n.name = l.name
        GROUP BY l.ordinal, l.target, l.heading, l.line, l.is_embed
        ORDER BY l.ordinal
        """,
        file_id,
    )
    backlinks = await connection.fetch(
        f"""
        SELECT l.target, l.heading, l.line, l.is_embed, linking.path
        FROM vault_links l
        JOIN vault_files linking ON linking.id = l.file_id
        JOIN vault_files f ON f.id = $1
        WHERE l.file_id <> $1 AND {link_resolves("f", "l")}
        ORDER BY linking.path, l.line
        """,
        file_id,
    )
    return [_link(r) for r in outgoing], [_link(r) for r in backlinks]


def _link(row: asyncpg.Record) -> StoredLink:
    return StoredLink(row["path"], row["target"], row["heading"], row["line"], row["is_embed"])
