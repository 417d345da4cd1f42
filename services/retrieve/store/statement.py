"""What every statement of the store shares, written once: numbered bind parameters, the filter clause, LIKE
patterns, and running a statement (with the vector scan's settings) within a deadline."""

from __future__ import annotations

import time
from typing import NamedTuple

import asyncpg

from secondbrain.db.sql import like_escape
from secondbrain.retrieve.filters import Filters

# hnsw.ef_search 100 is the design record's recall setting; relaxed_order lets the scan go on past ef_search when the
# filter rejects rows, so a narrow folder or tag filter still fills the LIMIT (pgvector 0.8's iterative scan).
HNSW_EF_SEARCH = 100


class Statement(NamedTuple):
    """SQL and its bind parameters, in order (public so tests and benchmarks can EXPLAIN a statement)."""

    sql: str
    params: list[object]


class Params:
    """Bind parameters in order; `add` returns the placeholder to write into the SQL, so no statement numbers its
    `$n` by hand. Every value the user typed is one of these: the only things formatted into SQL are the clauses
    built here and integers (a vector's dimension, which the HNSW partial indexes need as a literal cast)."""

    def __init__(self) -> None:
        self.values: list[object] = []

    def add(self, value: object) -> str:
        self.values.append(value)
        return f"${len(self.values)}"

    def filters(self, filters: Filters, file_alias: str, chunk_alias: str | None = None) -> str:
        """A boolean SQL expression over the `vault_files` row `file_alias`: the note is one of the notes named, is
        of one of the file types, is under one of the folders and carries one of the tags or a child of it
        (case-insensitively), and has a passage dated within the range (the `vault_chunks` row `chunk_alias` itself
        is, when given); "true" without filters."""
        clauses: list[str] = []
        if filters.notes:
            # First: `path` is unique, so the planner can start from the named notes' rows.
            clauses.append(f"{file_alias}.path = ANY({self.add(list(filters.notes))}::text[])")
        if filters.date_from or filters.date_to:
            meets: list[str] = []
            if filters.date_from:
                meets.append(f"{{c}}.date_end >= {self.add(filters.date_from)}::date")
            if filters.date_to:
                meets.append(f"{{c}}.date_start <= {self.add(filters.date_to)}::date")
            if chunk_alias is not None:
                clauses.append(" AND ".join(meets).format(c=chunk_alias))
            else:
                dated = " AND ".join(meets).format(c="dated")
                clauses.append(
                    f"EXISTS (SELECT 1 FROM vault_chunks dated WHERE dated.file_id = {file_alias}.id AND {dated})"
                )
        if filters.folders:
            folders = self.add([like_escape(folder + "/") + "%" for folder in filters.folders])
            clauses.append(f"{file_alias}.path LIKE ANY({folders}::text[])")
        if filters.file_types:
            suffixes = self.add(["%" + like_escape(suffix) for suffix in filters.suffixes])
            clauses.append(f"lower({file_alias}.path) LIKE ANY({suffixes}::text[])")
        if filters.tags:
            exact = self.add(list(filters.tags))
            children = self.add([like_escape(tag + "/") + "%" for tag in filters.tags])
            clauses.append(
                f"EXISTS (SELECT 1 FROM unnest({file_alias}.tags) AS tag "
                f"WHERE lower(tag) = ANY({exact}::text[]) OR lower(tag) LIKE ANY({children}::text[]))"
            )
        return " AND ".join(clauses) or "true"

    def statement(self, sql: str) -> Statement:
        return Statement(sql, self.values)


def exact_order(distance: str, filters: Filters) -> str:
    """The ORDER BY of a vector arm's `distance` expression (`embedding::vector(d) <=> $n`): as it is, so the HNSW
    index serves it, unless `filters` names notes. A few notes' chunks are then compared exactly, which takes
    milliseconds; through the graph, the scan would walk past nearly every other chunk to reach theirs, and the
    iterative scan gives up after `hnsw.max_scan_tuples`, finding fewer than asked or none. `+ 0` makes it an
    ordering no index provides."""
    return f"({distance}) + 0" if filters.notes else distance


def link_resolves(file_alias: str, link_alias: str) -> str:
    """A boolean SQL expression: the `vault_links` row `link_alias` names the `vault_files` row `file_alias`, as
    Obsidian resolves a wikilink: by path (with or without `.md`), file name, title or alias, case-insensitively."""
    f, target = file_alias, f"lower({link_alias}.target)"
    return (
        f"(lower({f}.path) = {target} OR lower({f}.path) = {target} || '.md'"
        f" OR lower(regexp_replace({f}.path, '^.*/', '')) = {target} || '.md'"
        f" OR lower({f}.title) = {target}"
        f" OR {target} = ANY(SELECT lower(a) FROM unnest({f}.aliases) a))"
    )


def link_names(file_alias: str) -> str:
    """An SQL text[] of every name a wikilink may call the `vault_files` row `file_alias` by, lower-cased: the names
    `link_resolves` matches (its path, the path without `.md`, its file name without `.md`, its title, its aliases),
    so a statement can join links to notes by equality (a hash join) instead of testing every pair."""
    f = file_alias
    return (
        f"(ARRAY[lower({f}.path),"
        f" CASE WHEN lower({f}.path) LIKE '%.md' THEN left(lower({f}.path), -3) END,"
        f" CASE WHEN lower({f}.path) LIKE '%.md' THEN left(lower(regexp_replace({f}.path, '^.*/', '')), -3) END,"
        f" lower({f}.title)] || ARRAY(SELECT lower(a) FROM unnest({f}.aliases) a))"
    )


def names_any(file_alias: str, names: str) -> str:
    """A boolean SQL expression: one of `link_names(file_alias)` is in the text[] `names` (lower-cased link targets),
    tested name by name so a note that matches none costs a few comparisons, not an array built for it."""
    f = file_alias
    return (
        f"(lower({f}.title) = ANY({names}) OR lower({f}.path) = ANY({names})"
        f" OR (lower({f}.path) LIKE '%.md' AND (left(lower({f}.path), -3) = ANY({names})"
        f" OR left(lower(regexp_replace({f}.path, '^.*/', '')), -3) = ANY({names})))"
        f" OR (cardinality({f}.aliases) > 0"
        f" AND EXISTS (SELECT 1 FROM unnest({f}.aliases) a WHERE lower(a) = ANY({names}))))"
    )


def deadline_after(seconds: float | None) -> float | None:
    """The `time.monotonic()` instant `seconds` from now; None (no limit) for None."""
    return None if seconds is None else time.monotonic() + seconds


def seconds_left(deadline: float) -> float:
    """What is left until `deadline` (a `time.monotonic()` instant), at least a millisecond."""
    return max(deadline - time.monotonic(), 0.001)


async def fetch(
    connection: asyncpg.Connection,
    statement: Statement,
    *,
    vector_scan: bool,
    deadline: float | None = None,
    ef_search: int = HNSW_EF_SEARCH,
) -> list[asyncpg.Record]:
    """The rows of `statement`, which must finish by `deadline` (a `time.monotonic()` instant; None: no limit).

    asyncpg's `timeout=` cancels the statement on the server when it fires, and so does cancelling the calling task
    (a client cancel or deadline). A statement with a vector arm (`vector_scan`) runs in a transaction of its own
    for `SET LOCAL` of the HNSW settings, which scopes them to it: other users of the pooled connection keep the
    defaults. It also gets a `statement_timeout` there, so the server stops it even if a cancel request is lost.
    `ef_search` is the scan's candidate list (HNSW_EF_SEARCH, the recall setting, unless a statement needs less).
    """

    def timeout() -> float | None:
        return None if deadline is None else seconds_left(deadline)

    if not vector_scan:
        return await connection.fetch(statement.sql, *statement.params, timeout=timeout())
    async with connection.transaction(readonly=True):
        settings = f"SET LOCAL hnsw.ef_search = {int(ef_search)}; SET LOCAL hnsw.iterative_scan = relaxed_order"
        if deadline is not None:
            settings += f"; SET LOCAL statement_timeout = {int(seconds_left(deadline) * 1000) + 1}"
        await connection.execute(settings, timeout=timeout())
        return await connection.fetch(statement.sql, *statement.params, timeout=timeout())
