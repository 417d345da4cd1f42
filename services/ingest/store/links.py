"""The links the indexed notes make (`vault_links`), read to learn whether a note names a file of the vault, and
whether a file is indexed itself (an attachment)."""

from __future__ import annotations

import asyncpg


async def is_indexed(connection: asyncpg.Connection, path: str) -> bool:
    """Whether the index holds the file at `path` (NFC) with its text: an attachment the index read."""
    found = await connection.fetchval(
        "SELECT 1 FROM vault_files WHERE path = $1 AND (status <> 'failed' OR body <> '')", path
    )
    return found is not None


def _endings(path: str) -> list[str]:
    """What a link naming `path` can be written as, lower-cased: the path and each ending of it after a '/'."""
    parts = path.lower().split("/")
    return ["/".join(parts[index:]) for index in range(len(parts))]


async def shown_in(connection: asyncpg.Connection, path: str, limit: int) -> list[tuple[str, str]]:
    """(title, the line's text) of each indexed note whose link or embed names the file at `path` by its path or
    an ending of it (`![[diagram.png]]`, `[[Papers/x.pdf#page=3]]`), in path order, at most `limit` of them: the
    notes an attachment is shown in, and what they say beside it."""
    return (await shown_in_each(connection, [path], limit)).get(path, [])


async def shown_in_each(
    connection: asyncpg.Connection, paths: list[str], limit: int
) -> dict[str, list[tuple[str, str]]]:
    """`shown_in` of every file in `paths` in one statement (one pass over the links, however many files), by path;
    a file no note shows is left out."""
    pairs = [(path, ending) for path in paths for ending in _endings(path)]
    rows = await connection.fetch(
        """
        WITH named AS (
            SELECT DISTINCT ON (e.path, f.path, l.line) e.path AS shown, f.path AS note, l.line, f.title,
                   split_part(f.body, E'\n', l.line - coalesce(f.body_start_line, 1) + 1) AS text
            FROM unnest($1::text[], $2::text[]) AS e(path, ending)
            JOIN vault_links l ON lower(normalize(l.target, NFC)) = e.ending
            JOIN vault_files f ON f.id = l.file_id
            WHERE f.path <> e.path AND (f.status <> 'failed' OR f.body <> '')
            ORDER BY e.path, f.path, l.line
        )
        SELECT shown, title, text FROM (
            SELECT named.*, row_number() OVER (PARTITION BY shown ORDER BY note, line) AS rank FROM named
        ) ranked
        WHERE rank <= $3
        ORDER BY shown, rank
        """,
        [path for path, _ in pairs],
        [ending for _, ending in pairs],
        limit,
    )
    found: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        found.setdefault(row["shown"], []).append((row["title"], row["text"] or ""))
    return found


async def links_naming(connection: asyncpg.Connection, path: str, limit: int) -> list[tuple[str, str]]:
    """(linking note's path, link target) of the links of readable notes whose target, in NFC and lower case, is
    the file at `path` or an ending of it after a '/', at most `limit` of them."""
    rows = await connection.fetch(
        """
        SELECT f.path, l.target
        FROM vault_links l JOIN vault_files f ON f.id = l.file_id
        WHERE lower(normalize(l.target, NFC)) = ANY($1::text[]) AND (f.status <> 'failed' OR f.body <> '')
        ORDER BY f.path, l.ordinal
        LIMIT $2
        """,
        _endings(path),
        limit,
    )
    return [(row["path"], row["target"]) for row in rows]


async def first_contexts(connection: asyncpg.Connection, paths: list[str]) -> dict[str, str]:
    """The context line of the first chunk of each indexed file in `paths` (an attachment's begins with the notes it
    is shown in), by path; a file with no chunks is left out."""
    rows = await connection.fetch(
        """
        SELECT f.path, c.context FROM vault_files f JOIN vault_chunks c ON c.file_id = f.id AND c.chunk_index = 0
        WHERE f.path = ANY($1::text[]) AND f.status = 'indexed'
        """,
        paths,
    )
    return {row["path"]: row["context"] or "" for row in rows}
