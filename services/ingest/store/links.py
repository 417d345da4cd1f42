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


async def links_naming(connection: asyncpg.Connection, endings: list[str], limit: int) -> list[tuple[str, str]]:
    """(linking note's path, link target) of the links of readable notes whose target, in NFC and lower case, is
    one of `endings` (a file's path and its endings after a '/', lower-cased), at most `limit` of them."""
    rows = await connection.fetch(
        """
        SELECT f.path, l.target
        FROM vault_links l JOIN vault_files f ON f.id = l.file_id
        WHERE lower(normalize(l.target, NFC)) = ANY($1::text[]) AND (f.status <> 'failed' OR f.body <> '')
        ORDER BY f.path, l.ordinal
        LIMIT $2
        """,
        endings,
        limit,
    )
    return [(row["path"], row["target"]) for row in rows]
