"""GetAttachment: a file a note embeds or links to (an image, a PDF), read from the vault for the web UI's reader.

It is a door from the network into the vault's folder, so it serves far less than the folder holds:

- Only a name a note could write. The target is taken as Obsidian takes a link's (`|alias` and `#page=3` dropped,
  Unicode in NFC as note paths are); a `..`, an absolute or drive path, a backslash, NUL or another control
  character, an empty or `.` segment, a hidden (dot) segment, or any of these percent-encoded (`%2e%2e`, also
  twice) is refused as INVALID_ARGUMENT before anything is looked up.
- Only the types the reader shows, by extension first (PNG, JPEG, GIF, WebP, AVIF, BMP, PDF) and then by the bytes,
  which must be what the extension says: a `.png` that is HTML, or a JPEG, is refused. SVG is not served: it is a
  document that can run script, and whether it ever does depends on how every client shows it (an `<img>` does not,
  a browser tab opened on the route would); no such guarantee is ours to give.
- Only files the walk would see: the vault is listed as the note walk lists it (dot-folders such as .obsidian and
  .secondbrain, `ingest.ignore` patterns and symlinked folders left out), and the file is read by
  `vault_files.read_inside`, which follows a symlink only to a place inside the vault that is itself not left out
  (judged at the moment of opening, and opened without following any link, so one swapped in after the check is
  refused, not followed). A file with more than one hard link is refused: it may be a file from outside the vault
  given a name inside it, and nothing about it tells.
- Only files the index holds (an attachment it read) or an indexed note links to: the target resolves as Obsidian
  resolves an embed (an exact vault-relative
  path; else the file of that name or partial path next to the linking note, else the shortest such path), and the
  file it names must also be what some indexed note's own link (`vault_links`) resolves to, from that note. So
  nothing outside the index is served, not even a picture sitting in the vault that no note shows.
- Within `ingest.max_attachment_bytes` (RESOURCE_EXHAUSTED beyond, naming the setting); the file is measured on the
  descriptor that is read and the read is bounded, so a file that grows meanwhile is refused too.

Nothing here knows gRPC: it raises the domain errors the servicer's error mapping turns into statuses.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

from secondbrain.db import Database
from secondbrain.errors import InvalidInput, NotFound, ResourceExhausted
from secondbrain.ingest import store
from secondbrain.ingest.ignore_patterns import ignore_pattern
from secondbrain.ingest.note_paths import MAX_PATH_BYTES, name_problem, note_path
from secondbrain.service.limits import describe
from secondbrain.vault_config import load_vault_config
from secondbrain.vault_files import HardLinked, OutsideVault, TooLarge, read_inside

# What the reader shows, by extension: the media type the bytes must then be.
MEDIA_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".avif": "image/avif",
    ".bmp": "image/bmp",
    ".pdf": "application/pdf",
}
_KINDS = {
    "image/png": "a PNG image",
    "image/jpeg": "a JPEG image",
    "image/gif": "a GIF image",
    "image/webp": "a WebP image",
    "image/avif": "an AVIF image",
    "image/bmp": "a BMP image",
    "application/pdf": "a PDF",
}
SERVED_TYPES = "PNG, JPEG, GIF, WebP, AVIF, BMP and PDF"
# Links followed back to their notes to find whether one names the file: far more than any file has (a logo on
# every page of a vault), and a bound on what one request can make the service read.
MAX_LINKS_CHECKED = 2000
# How long a listing of the vault is reused: a file added since is found this much later at most. (What is read is
# read afresh and judged at the moment of reading, whatever the listing says.)
LISTING_SECONDS = 2.0
# Percent-decoding is repeated this often, so a target encoded twice (%252e%252e) is read for what it hides.
_DECODE_ROUNDS = 3
_DRIVE_RE = re.compile(r"^[A-Za-z]:")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Attachment:
    path: str
    media_type: str
    content: bytes


@dataclass(frozen=True)
class Listing:
    """The files of a vault the reader may show, by note-style path (NFC): each one's name on disk."""

    on_disk: dict[str, str]

    def resolve(self, target: str, from_path: str) -> str | None:
        """The file `target` names when written in the note `from_path`, as Obsidian resolves an embed: the exact
        vault-relative path (case first as written, then in any case); else the target under the note's own
        folder; else any file whose path ends with it (a bare name or a partial path), the shortest path first.
        Letter case does not matter past the exact match, as in Obsidian."""
        if target in self.on_disk:
            return target
        wanted = target.lower()
        lowered = sorted(path for path in self.on_disk if path.lower() == wanted)
        if lowered:
            return lowered[0]
        folder = str(PurePosixPath(from_path).parent) if from_path else "."
        if folder != ".":
            beside = f"{folder}/{target}".lower()
            near = sorted(path for path in self.on_disk if path.lower() == beside)
            if near:
                return near[0]
        ending = "/" + wanted
        matches = [path for path in self.on_disk if path.lower().endswith(ending)]
        return min(matches, key=lambda path: (len(path), path)) if matches else None


class AttachmentReader:
    """Reads the files of one index's vault that its notes link to."""

    def __init__(self, db: Database) -> None:
        self.db = db
        # The last listing of the vault, reused for LISTING_SECONDS: a note showing twenty images asks twenty times
        # at once, and a vault of 20,000 files takes about 0.1 s to list (two cores).
        self._listing: tuple[tuple[Path, tuple[str, ...]], float, Listing] | None = None
        self._listing_lock = asyncio.Lock()

    async def _list(self, vault: Path, ignore: list[str]) -> Listing:
        key = (vault, tuple(ignore))
        async with self._listing_lock:
            cached = self._listing
            if cached is not None and cached[0] == key and time.monotonic() - cached[1] < LISTING_SECONDS:
                return cached[2]
            listing = await asyncio.to_thread(list_vault_files, vault, ignore)
            self._listing = (key, time.monotonic(), listing)
            return listing

    async def read(self, vault: Path, target: str, from_path: str) -> Attachment:
        wanted = link_target(target)
        media_type = _media_type_of(wanted)
        origin = _from_path(from_path)
        config = await asyncio.to_thread(load_vault_config, vault)
        ignore = [pattern for pattern in config.ingest.ignore if pattern.strip()]
        listing = await self._list(vault, ignore)
        path = listing.resolve(wanted, origin)
        if path is None:
            raise NotFound(f"the vault has no file {wanted!r} (looked for as a note at {origin or 'the top'} names it)")
        if not await self._linked(path, listing):
            raise NotFound(
                f"{path} is not indexed, nor linked or embedded by any indexed note; only files the index holds or "
                "its notes link to are served"
            )
        limit = config.ingest.max_attachment_bytes
        data = await asyncio.to_thread(_read, vault, listing.on_disk[path], path, ignore, limit)
        found = sniff(data)
        if found != media_type:
            what = _KINDS[found] if found else "not any type served"
            raise InvalidInput(
                f"{path} is named as {_KINDS[media_type]} but its bytes are {what}; a file that is not what its "
                "name says is not served"
            )
        return Attachment(path, media_type, data)

    async def _linked(self, path: str, listing: Listing) -> bool:
        """Whether `path` is indexed itself (an attachment whose passages a citation opens), or some indexed note's
        link, resolved from that note, names it."""
        async with self.db.pool.acquire() as connection:
            if await store.is_indexed(connection, path):
                return True
            links = await store.links_naming(connection, path, MAX_LINKS_CHECKED)
        return any(listing.resolve(note_path(target), source) == path for source, target in links)


def link_target(target: str) -> str:
    """The file a link names, as a clean vault-relative name in NFC: `|alias` (an image's `|300` size too) and
    `#page=3` or `#heading` dropped. Raises InvalidInput for whatever could lead out of the vault or into its hidden
    folders, as written or percent-encoded."""
    name = target.partition("|")[0].partition("#")[0].strip()
    if not name:
        raise InvalidInput("no file named: give the link's target, as the note writes it ('diagram.png')")
    for form in _decoded_forms(name):
        if problem := _path_problem(form):
            encoded = " (percent-encoded)" if form != name else ""
            raise InvalidInput(f"{target!r} is not a file of the vault{encoded}: {problem}")
    return note_path(name)


def _from_path(from_path: str) -> str:
    """The linking note's path, checked as a target is: it only places the link, but is a path all the same."""
    if not from_path:
        return ""
    if problem := _path_problem(from_path):
        raise InvalidInput(f"from_path {from_path!r} is not a note of the vault: {problem}")
    return note_path(from_path)


def _decoded_forms(name: str) -> list[str]:
    forms = [name]
    for _ in range(_DECODE_ROUNDS):
        decoded = unquote(forms[-1]) if "%" in forms[-1] else forms[-1]
        if decoded == forms[-1]:
            break
        forms.append(decoded)
    return forms


def _path_problem(path: str) -> str:
    """Why `path` cannot name a file the reader serves, or ''."""
    if _CONTROL_RE.search(path):
        return "it holds NUL or another control character"
    if "\\" in path:
        return "it holds a backslash; links in a vault use '/' between folders"
    if path.startswith("/") or _DRIVE_RE.match(path):
        return "it is an absolute path; give one inside the vault"
    segments = path.split("/")
    if ".." in segments:
        return "it climbs out of its folder with '..'"
    if any(segment in ("", ".") for segment in segments):
        return "it has an empty or '.' folder in it"
    if any(segment.startswith(".") for segment in segments):
        return "it is in a hidden folder (such as .obsidian or .secondbrain), which is not served"
    if len(path.encode("utf-8", errors="surrogatepass")) > MAX_PATH_BYTES:
        return f"it is longer than {MAX_PATH_BYTES} bytes"
    return ""


def _media_type_of(path: str) -> str:
    suffix = PurePosixPath(path).suffix.lower()
    media_type = MEDIA_TYPES.get(suffix)
    if media_type is None:
        kind = f"a {suffix} file" if suffix else "a file without an extension"
        raise InvalidInput(f"{path} is {kind}; only {SERVED_TYPES} files are served")
    return media_type


def list_vault_files(root: Path, ignore: Sequence[str]) -> Listing:
    """The files of the vault with a type the reader serves, as the note walk would see them: dot-folders and
    dot-files, `ignore` patterns and names that are not UTF-8 left out, symlinked folders not entered (a file
    symlink is listed, and judged when it is read). The walk never follows a link, so it cannot loop. (The
    vault's secondbrain.json is of no type served, so it is never listed.)"""
    patterns = [ignore_pattern(pattern) for pattern in ignore]
    found: dict[str, str] = {}
    pending = [""]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(root / folder if folder else root) as entries:
                listed = list(entries)
        except OSError:
            continue
        for entry in listed:
            if entry.name.startswith("."):
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            # (Most of a vault is notes: a file of another type is passed over before anything else is asked.)
            if not is_dir and PurePosixPath(entry.name).suffix.lower() not in MEDIA_TYPES:
                continue
            relative = f"{folder}/{entry.name}" if folder else entry.name
            if name_problem(relative) or any(pattern(relative, is_dir) for pattern in patterns):
                continue
            if is_dir:
                pending.append(relative)
            else:
                found.setdefault(note_path(relative), relative)
    return Listing(found)


def _read(vault: Path, on_disk: str, path: str, ignore: Iterable[str], limit: int) -> bytes:
    patterns = [ignore_pattern(pattern) for pattern in ignore]

    def judge(inside: str) -> str:
        if any(pattern(inside, False) for pattern in patterns):
            return f"{path} is a symlink to {inside}, which the vault's ingest.ignore leaves out; not served"
        return ""

    try:
        return read_inside(vault, on_disk, limit, judge=judge, one_name=True)
    except OutsideVault as error:
        raise NotFound(f"{error}; only files inside the vault are served") from None
    except HardLinked as error:
        raise InvalidInput(str(error)) from None
    except TooLarge as error:
        raise ResourceExhausted(
            f"{path} is {_size(error.size)}, over the {_size(error.limit)} limit for an attachment "
            "(ingest.max_attachment_bytes in secondbrain.json)"
        ) from None
    except OSError as error:
        raise NotFound(f"{path} cannot be read: {error.strerror or error}") from None


def _size(size: int) -> str:
    return describe(size) if size >= 1024 else f"{size} bytes"


def sniff(data: bytes) -> str | None:
    """The media type the bytes are, of those served, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[4:8] == b"ftyp" and _avif_brand(data):
        return "image/avif"
    if data[:2] == b"BM" and len(data) >= 26 and _bmp_header(data):
        return "image/bmp"
    if data.startswith(b"%PDF-"):
        return "application/pdf"
    return None


def _avif_brand(data: bytes) -> bool:
    """An ISO media file whose major or compatible brands say AVIF (`avif`, or `avis` for a sequence)."""
    size = int.from_bytes(data[:4], "big")
    if size < 16 or size > len(data):
        return False
    brands = [data[8:12]] + [data[offset : offset + 4] for offset in range(16, size, 4)]
    return any(brand in (b"avif", b"avis") for brand in brands)


def _bmp_header(data: bytes) -> bool:
    """A BMP's header: pixel data starting inside the file, after a DIB header of a known size."""
    offset = int.from_bytes(data[10:14], "little")
    header = int.from_bytes(data[14:18], "little")
    return header in (12, 40, 52, 56, 64, 108, 124) and 14 + header <= offset <= len(data)
