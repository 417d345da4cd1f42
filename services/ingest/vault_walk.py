"""Which files in a vault are notes, and reading one safely.

A vault is a folder a person also uses with other tools, so the walk is defensive: it never leaves the vault
through a symlink, never loops, never reads a file twice under two names, and reports every markdown file it
will not index with a reason the person can act on. Paths are vault-relative POSIX strings in Unicode NFC because
they are the notes' identity in the database and in citations, whatever the operating system (`note_paths` holds
those rules); every file read from the vault (notes and personas alike) is found by the rules here and read by
`secondbrain.vault_files.read_inside`, which re-checks at the moment of reading what the walk checked before.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from secondbrain.errors import FailedPrecondition, InvalidInput
from secondbrain.file_kinds import is_attachment
from secondbrain.ingest.ignore_patterns import ignore_pattern
from secondbrain.ingest.note_paths import name_problem, note_path, path_length_problem, spelled_out
from secondbrain.vault_files import read_inside

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@dataclass(frozen=True)
class VaultFile:
    """A note found by the walk: `path` is its identity (NFC), `on_disk` the vault-relative name as the file system
    spells it (macOS writes NFD), which is what is opened, inside `vault`. `max_bytes` bounds the read, which may
    come well after the walk measured the file."""

    path: str
    vault: Path
    size: int
    mtime: float
    on_disk: str
    max_bytes: int | None = None

    @property
    def absolute(self) -> Path:
        return self.vault / self.on_disk


@dataclass(frozen=True)
class SizeLimit:
    """The largest file read, with what sets it and what to do about a larger one, for the reason a file is skipped."""

    bytes: int
    setting: str
    advice: str


@dataclass(frozen=True)
class Skipped:
    """A markdown file (or a symlink) the walk will not index, and why. `forget`: the path is not a note of this
    vault at all now (a link), so what was stored under it goes; otherwise (too large, not UTF-8, unreadable) a
    version indexed before stays searchable until the file is fixed."""

    path: str
    reason: str
    forget: bool = False


def walk_vault(
    root: Path,
    ignore: Sequence[str] = (),
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_attachment_bytes: int | None = None,
) -> tuple[list[VaultFile], list[Skipped]]:
    """Every `*.md` under `root` (sorted by path) and the markdown files or symlinks skipped, with reasons; with
    `max_attachment_bytes`, the attachments too (PDFs, pictures, canvases, Office files: `formats.is_attachment`),
    each within that size.

    Dot-folders (.obsidian, .git, .trash, and .claude where personas live) and paths matching an `ignore` glob
    are left out silently: Obsidian hides the first and the person asked for the second. Symlinks
    are followed only when they resolve inside the vault; a note reachable under two paths is listed once, under
    its real path. Paths are in NFC, whatever the spelling on disk; one too long to index, or not UTF-8, is skipped
    (and reported with its bad bytes spelled out, as '\\xe9').
    """
    walk = _Walk(root, ignore, SizeLimit(max_file_bytes, "ingest.max_file_bytes", "raise the limit or split the note"))
    if max_attachment_bytes is not None:
        walk.attachment_limit = SizeLimit(
            max_attachment_bytes, "ingest.max_attachment_file_bytes", "raise the limit or split the file"
        )
    return walk.run()


def list_folder(root: Path, folder: str, size_limit: SizeLimit) -> tuple[list[VaultFile], list[Skipped]]:
    """The `*.md` files directly in the vault folder `folder` (hidden ones too, such as .claude/agents) and those
    skipped, by the walk's rules: symlinks followed only inside the vault, regular files within `size_limit`, paths
    short enough to index and in UTF-8. Nothing is listed when the folder does not exist."""
    walk = _Walk(root, (), size_limit)
    return walk.run_folder(folder)


def read_note_text(file: VaultFile) -> str:
    """The note's text: UTF-8 (a BOM is dropped) with '\\r\\n' and '\\r' turned into '\\n'.

    Read by `read_inside`, so whatever the path has become since the walk, nothing outside the vault is read. A
    file with more than one hard link is not read (HardLinked), as the attachment door does not: a hard link is the
    file itself, so nothing shows that its other name is outside the vault (one made to a file of the server's, or
    of another user where `fs.protected_hardlinks` is off, was indexed and served; issue 47, friction 3).
    Raises InvalidInput for binary or non-UTF-8 content, naming the byte offset so the person can find it;
    NotFound when the file has gone since the walk; OutsideVault when it has become a link out of the vault;
    HardLinked when it has another name; FailedPrecondition when it cannot be read.
    """
    try:
        data = read_inside(file.vault, file.on_disk, file.max_bytes, one_name=True)
    except OSError as error:
        raise FailedPrecondition(f"cannot read {file.path}: {error.strerror or error}") from None
    return _decode_note_bytes(file.path, data)


def _decode_note_bytes(path: str, data: bytes) -> str:
    """UTF-8 text from a note file's bytes, or InvalidInput saying where the problem is."""
    if data.startswith(_UTF16_BOMS):
        raise InvalidInput(f"{path} is UTF-16 encoded; save it as UTF-8 to index it")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InvalidInput(f"{path} looks binary (a NUL byte at byte offset {nul}); notes must be UTF-8 text")
    skipped = len(_UTF8_BOM) if data.startswith(_UTF8_BOM) else 0
    try:
        text = data[skipped:].decode("utf-8")
    except UnicodeDecodeError as error:
        offset = error.start + skipped
        line = data.count(b"\n", 0, offset) + 1
        raise InvalidInput(
            f"{path} is not valid UTF-8: byte 0x{data[offset]:02x} at byte offset {offset} (line {line}); "
            "save it as UTF-8 to index it"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


class _Walk:
    """One walk: the real directories already seen (the loop and duplicate guard) and the results so far."""

    def __init__(self, root: Path, ignore: Sequence[str], size_limit: SizeLimit) -> None:
        if not root.is_dir():
            raise InvalidInput(f"the vault folder {root} does not exist or is not a folder")
        self.root = root.resolve()
        self.patterns = [ignore_pattern(pattern) for pattern in ignore if pattern.strip()]
        self.size_limit = size_limit
        # Attachments are walked only when this is set (not for a folder of personas).
        self.attachment_limit: SizeLimit | None = None
        self.seen_dirs: dict[Path, str] = {}
        self.found: dict[Path, tuple[str, VaultFile]] = {}
        self.linked_files: list[tuple[str, Path]] = []
        self.skipped: list[Skipped] = []

    def run(self) -> tuple[list[VaultFile], list[Skipped]]:
        # Real folders first and symlinked ones after, so a note reachable both ways keeps its real path.
        linked_dirs = self.walk_tree("", self.root)
        while linked_dirs:
            relative, target = linked_dirs.pop(0)
            linked_dirs.extend(self.walk_linked_dir(relative, target))
        return self.results()

    def run_folder(self, folder: str) -> tuple[list[VaultFile], list[Skipped]]:
        directory = Path(self.root, folder)
        try:
            real = directory.resolve(strict=True)
        except (OSError, RuntimeError):
            return [], []
        if not real.is_relative_to(self.root):
            return [], [Skipped(folder, "symlink to outside the vault; not followed")]
        if not real.is_dir():
            return [], []
        for entry in self.entries(folder, directory):
            child = f"{folder}/{entry.name}"
            if entry.name.startswith(".") or not _is_markdown(entry.name):
                continue
            if entry.is_symlink():
                self.symlink(child, entry)  # a folder it links to is not walked: only the files directly here count
            elif not entry.is_dir(follow_symlinks=False):
                self.add_file(child, Path(entry.path))
        return self.results()

    def results(self) -> tuple[list[VaultFile], list[Skipped]]:
        for relative, target in self.linked_files:
            self.add_linked_file(relative, target)
        files: dict[str, VaultFile] = {}
        # Composed spellings first: of two files whose names differ only in Unicode form, that one is the note.
        found = (file for _, file in self.found.values())
        for file in sorted(found, key=lambda file: (file.on_disk != file.path, file.on_disk)):
            kept = files.setdefault(file.path, file)
            if kept is not file:
                self.skipped.append(
                    Skipped(
                        file.on_disk,
                        f"another file, {kept.on_disk!a}, has the same name in another Unicode form (macOS writes "
                        "names decomposed) and is indexed as this note; remove or rename one of them",
                    )
                )
        # A skipped name (or a reason quoting one) may be one that is not UTF-8, which only its spelled-out form
        # can be stored and reported under.
        skipped = [
            Skipped(note_path(spelled_out(item.path)), spelled_out(item.reason), item.forget) for item in self.skipped
        ]
        return sorted(files.values(), key=lambda file: file.path), sorted(skipped, key=lambda item: item.path)

    def walk_tree(self, relative: str, directory: Path) -> list[tuple[str, Path]]:
        """Walk real folders under `directory`; return the symlinked folders met, to walk afterwards."""
        self.seen_dirs[directory.resolve()] = relative
        linked: list[tuple[str, Path]] = []
        pending = [(relative, directory)]
        while pending:
            current, path = pending.pop()
            for entry in self.entries(current, path):
                child = f"{current}/{entry.name}" if current else entry.name
                if entry.name.startswith(".") or self.ignored(child, _is_dir(entry)):
                    continue
                if entry.is_symlink():
                    linked.extend(self.symlink(child, entry))
                elif entry.is_dir(follow_symlinks=False):
                    real = Path(entry.path).resolve()
                    if real not in self.seen_dirs:  # Met before only inside a symlinked folder: already walked.
                        self.seen_dirs[real] = child
                        pending.append((child, Path(entry.path)))
                elif self.indexes(entry.name):
                    self.add_file(child, Path(entry.path))
        return linked

    def indexes(self, name: str) -> bool:
        """Whether a file of this name is one the walk lists: a note, or an attachment when they are walked."""
        return _is_markdown(name) or (self.attachment_limit is not None and is_attachment(name))

    def entries(self, relative: str, path: Path) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(path) as iterator:
                return list(iterator)
        except OSError as error:
            self.skipped.append(Skipped(relative or ".", f"cannot read this folder: {error.strerror or error}"))
            return []

    def symlink(self, relative: str, entry: os.DirEntry[str]) -> list[tuple[str, Path]]:
        """Decide about one symlink; a folder inside the vault is returned to be walked later."""
        try:
            target = Path(entry.path).resolve(strict=True)
            info = target.stat()
        except (OSError, RuntimeError):
            if self.indexes(entry.name):
                self.skipped.append(Skipped(relative, "broken symlink (its target does not exist or loops)", True))
            return []
        if not target.is_relative_to(self.root):
            self.skipped.append(Skipped(relative, "symlink to outside the vault; not followed", True))
            return []
        is_dir = stat.S_ISDIR(info.st_mode)
        if target != self.root and self.excluded(target.relative_to(self.root).as_posix(), is_dir):
            inside = target.relative_to(self.root).as_posix()
            self.skipped.append(
                Skipped(relative, f"symlink to {inside}, which is not indexed (a hidden folder or ingest.ignore)", True)
            )
            return []
        if is_dir:
            return [(relative, target)]
        if self.indexes(entry.name):
            self.linked_files.append((relative, target))
        return []

    def walk_linked_dir(self, relative: str, target: Path) -> list[tuple[str, Path]]:
        already = self.seen_dirs.get(target)
        if already is not None:
            where = f"the folder {already}" if already else "the vault folder itself"
            self.skipped.append(Skipped(relative, f"symlink to {where}, which is indexed under its own path", True))
            return []
        return self.walk_tree(relative, Path(self.root, relative))

    def add_linked_file(self, relative: str, target: Path) -> None:
        listed = self.found.get(target)
        if listed is not None:
            self.skipped.append(Skipped(relative, f"symlink to {listed[0]}, which is indexed under that path", True))
            return
        self.add_file(relative, Path(self.root, relative), real=target)

    def add_file(self, relative: str, path: Path, real: Path | None = None) -> None:
        if bad_name := name_problem(relative):
            self.skipped.append(Skipped(relative, bad_name))
            return
        name = note_path(relative)
        # Both spellings are keys: the note's in the index, the one on disk in the queue.
        too_long = path_length_problem(relative) or path_length_problem(name)
        if too_long:
            self.skipped.append(Skipped(relative, too_long))
            return
        try:
            info = path.stat()
            real = real or path.resolve()
        except OSError as error:
            self.skipped.append(Skipped(relative, f"cannot read this file: {error.strerror or error}"))
            return
        if not stat.S_ISREG(info.st_mode):
            self.skipped.append(Skipped(relative, "not a regular file (a device, socket or pipe)"))
            return
        limit = self.size_limit
        if self.attachment_limit is not None and not _is_markdown(relative):
            limit = self.attachment_limit
        if info.st_size > limit.bytes:
            self.skipped.append(
                Skipped(
                    relative,
                    f"larger than the {_format_bytes(limit.bytes, exact=True)} limit ({limit.setting}): "
                    f"{_format_bytes(info.st_size)}; {limit.advice}",
                )
            )
            return
        if real in self.found:
            return
        file = VaultFile(name, self.root, info.st_size, info.st_mtime, on_disk=relative, max_bytes=limit.bytes)
        self.found[real] = (relative, file)

    def ignored(self, relative: str, is_dir: bool = False) -> bool:
        return any(pattern(relative, is_dir) for pattern in self.patterns)

    def excluded(self, relative: str, is_dir: bool) -> bool:
        """Whether the walk leaves this path out: inside a dot-folder, or matching an ignore pattern."""
        return any(part.startswith(".") for part in relative.split("/")) or self.ignored(relative, is_dir)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether the entry is (or links to) a folder; a looping or broken link is not one."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_markdown(name: str) -> bool:
    return name.lower().endswith(".md")


def _format_bytes(size: int, exact: bool = False) -> str:
    """ "10 MB", "1.5 KB"; `exact` keeps a limit that is not a whole number of units in bytes, as configured."""
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if size >= scale:
            if size % scale == 0:
                return f"{size // scale} {unit}"
            if not exact:
                return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"
