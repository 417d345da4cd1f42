"""Reading a file of the vault without being led out of it: the one way any part of secondbrain opens one.

A vault is a folder other tools (a sync client, a shared drive, a git checkout) also write, so what is at a path can
change between the moment it is looked at and the moment it is read. A link may lead somewhere else inside the vault
(Obsidian users link folders), but never out of it, nor into a hidden folder the walk leaves out. So the path is
resolved first and judged, and the file is then opened from the vault's own folder one component at a time without
following any link: a link put in place after the check is refused, not followed (found by a probe: a note swapped
for a link to /etc/passwd between the walk and the read was indexed and served). And it is opened without waiting,
so a pipe swapped in cannot hang the reader.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from secondbrain.errors import FailedPrecondition, NotFound

_READ_ONLY = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
_NO_LINK = getattr(os, "O_NOFOLLOW", 0)
_FOLDER = getattr(os, "O_DIRECTORY", 0)
_NO_WAIT = getattr(os, "O_NONBLOCK", 0)


class OutsideVault(FailedPrecondition):
    """The path is (now) a link out of the vault, or into a hidden folder of it: not read, and not a note."""


class TooLarge(FailedPrecondition):
    """The file is larger than the reader allows (`size` bytes, or more, over `limit`)."""

    def __init__(self, message: str, size: int, limit: int) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


class HardLinked(FailedPrecondition):
    """The file has more than one name (a hard link), and the reader asked for files with one only."""


def read_inside(
    vault: Path,
    relative: str,
    max_bytes: int | None = None,
    *,
    judge: Callable[[str], str] | None = None,
    one_name: bool = False,
) -> bytes:
    """The bytes of `vault/relative`, read without leaving `vault`.

    Links are followed only to somewhere inside the vault and outside its hidden folders (a path that is itself in
    a hidden folder, such as .claude/agents, may stay in that one). `judge`, when given, is asked about the
    vault-relative path the link leads to (the file that is then opened, with no link followed): a reason it
    returns refuses it as OutsideVault, so a caller can keep out what its walk leaves out (ignore patterns).
    `one_name` refuses a file with more than one hard link (HardLinked): a hard link is the file itself, not a
    link that can be seen to lead out, so it may be a file from outside the vault given a name inside it.

    Raises OutsideVault when the path leads out; NotFound when nothing is there; FailedPrecondition when it is not a
    regular file, is larger than `max_bytes` (TooLarge), or changed into a link while being opened; OSError for
    anything else the system refuses.
    """
    root = Path(os.path.realpath(vault))
    real = Path(os.path.realpath(root / relative))
    if not real.is_relative_to(root):
        raise OutsideVault(f"{relative} is a symlink to outside the vault; not followed")
    inside = PurePosixPath(real.relative_to(root).as_posix())
    if _hidden(inside) and not _hidden(PurePosixPath(relative)):
        raise OutsideVault(f"{relative} is a symlink into the hidden folder {inside.parent}; not followed")
    if not inside.parts:
        raise FailedPrecondition(f"{relative} is the vault folder itself, not a file")
    if judge is not None and (reason := judge(inside.as_posix())):
        raise OutsideVault(reason)
    descriptor = _open_without_links(root, inside.parts, relative)
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise FailedPrecondition(f"{relative} is not a regular file (a folder, device, socket or pipe)")
        if one_name and info.st_nlink > 1:
            raise HardLinked(
                f"{relative} is a hard link (the file has {info.st_nlink} names), which may name a file from outside "
                "the vault; not read (a file of its own is: a copy moved over it, say)"
            )
        if max_bytes is not None and info.st_size > max_bytes:
            raise TooLarge(f"{relative} is larger than {max_bytes} bytes ({info.st_size})", info.st_size, max_bytes)
        # Bounded even when the file grows while it is read.
        data = file.read() if max_bytes is None else file.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        raise TooLarge(f"{relative} grew past {max_bytes} bytes while it was read", len(data), max_bytes)
    return data


def _open_without_links(root: Path, parts: tuple[str, ...], relative: str) -> int:
    """A descriptor for `root/parts...`, each component opened from its parent's descriptor with links refused."""
    try:
        folder = os.open(root, _READ_ONLY | _FOLDER)
    except FileNotFoundError:
        raise NotFound(f"the vault folder {root} no longer exists") from None
    try:
        for part in parts[:-1]:
            inner = os.open(part, _READ_ONLY | _FOLDER | _NO_LINK, dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(parts[-1], _READ_ONLY | _NO_LINK | _NO_WAIT, dir_fd=folder)
    except FileNotFoundError:
        raise NotFound(f"{relative} no longer exists in the vault") from None
    except OSError as error:
        # ELOOP (EMLINK on some BSDs) for a link, ENOTDIR for a folder that is no longer one: something was put in
        # place after the path was judged.
        if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise FailedPrecondition(
                f"{relative} changed while it was read (a link or another file put in its place); not followed, "
                "the next sync looks again"
            ) from None
        raise
    finally:
        os.close(folder)


def _hidden(path: PurePosixPath) -> bool:
    return any(part.startswith(".") for part in path.parts)
