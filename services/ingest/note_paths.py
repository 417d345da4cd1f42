"""The rules for a note's path, which is its identity in the database and in citations, whatever the operating
system: a vault-relative POSIX string in Unicode NFC, short enough to be a key, spelled in UTF-8, and (when a client
sends it) unable to leave the vault."""

from __future__ import annotations

import re
import unicodedata

_DRIVE_RE = re.compile(r"^[A-Za-z]:")
# A note's path is the unique key of vault_files and half of ingest_queue's (run_id, path) key. A btree refuses a key
# over about 2,700 bytes (a third of an 8 KB page), which would fail the insert and with it the whole sync. 1 KB is far
# longer than any real note path and keeps every key well inside the limit, the on-disk spelling a sync queues too.
MAX_PATH_BYTES = 1024


def note_path(path: str) -> str:
    """The note a vault-relative path names: the path in Unicode NFC. macOS spells names decomposed (NFD), most other
    tools composed, so without this one name would be two notes."""
    return unicodedata.normalize("NFC", path)


def path_length_problem(path: str) -> str:
    """Why `path` is too long to name a note (see MAX_PATH_BYTES), or '' when it is not."""
    size = len(path.encode("utf-8", errors="surrogatepass"))
    if size <= MAX_PATH_BYTES:
        return ""
    return (
        f"the path is {size} bytes long (UTF-8), over the {MAX_PATH_BYTES}-byte limit for a note's path; "
        "move the note to a shorter folder or give it a shorter name"
    )


def name_problem(relative: str) -> str:
    """Why the vault-relative name `relative` cannot name a note because it is not UTF-8, or '' when it is.

    Linux lets a name be any bytes; one written in another encoding (Latin-1, say) reaches Python with each bad byte
    as a lone surrogate, which neither PostgreSQL nor protobuf can carry, so the note could be neither stored nor
    reported under it.
    """
    *folders, name = relative.split("/")
    for folder in folders:
        if not _is_utf8(folder):
            return (
                f"the folder name {spelled_out(folder)} is not valid UTF-8 (it was written in another encoding, such "
                "as Latin-1); rename it to index the notes in it"
            )
    if not _is_utf8(name):
        return "the file name is not valid UTF-8 (it was written in another encoding, such as Latin-1); rename it"
    return ""


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def spelled_out(text: str) -> str:
    """`text` with each byte of a name that is not UTF-8 written as '\\xe9', so the person can find the file and
    the text can be stored and sent; valid text is returned as it is."""
    try:
        raw = text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:  # a surrogate that is not an escaped byte (not from the file system)
        raw = text.encode("utf-8", errors="surrogatepass")
    return raw.decode("utf-8", errors="backslashreplace")


def is_note_path(path: str) -> bool:
    """Whether `path` may name a note: relative POSIX, canonical, `.md`, outside dot-folders.

    Checked on every path a client sends, because the path becomes a database key and a file name: no '..', no
    absolute or drive paths, no backslashes, no empty or '.' segments, no NUL. Dot-folders (.obsidian, .git,
    .trash and the rest) are refused as the walk never indexes them either.
    """
    if not path or "\x00" in path or "\\" in path or path.startswith("/") or _DRIVE_RE.match(path):
        return False
    segments = path.split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        return False
    if any(segment.startswith(".") for segment in segments[:-1]):
        return False
    name = segments[-1]
    return name.lower().endswith(".md") and len(name) > len(".md") and not name.startswith(".")
