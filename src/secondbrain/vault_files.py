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
from pathlib import Path, PurePosixPath

from secondbrain.errors import FailedPrecondition, NotFound

_READ_ONLY = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
_NO_LINK = getattr(os, "O_NOFOLLOW", 0)
_FOLDER = getattr(os, "O_DIRECTORY", 0)
_NO_WAIT = getattr(os, "O_NONBLOCK", 0)


class OutsideVault(FailedPrecondition):
    """The path is (now) a link out of the vault, or into a hidden folder of it: not read, and not a note."""


def read_inside(vault: Path, relative: str, max_bytes: int | None = None) -> bytes:
    """The bytes of `vault/relative`, read without leaving `vault`.

    Links are followed only to somewhere inside the vault and outside its hidden folders (a path that is itself in
    a hidden folder, such as .claude/agents, may stay in that one). Raises OutsideVault when the path leads out;
    NotFound when nothing is there; FailedPrecondition when it is not a regular file, is larger than `max_bytes`, or
    changed into a link while being opened; OSError for anything else the system refuses.
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
    descriptor = _open_without_links(root, inside.parts, relative)
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise FailedPrecondition(f"{relative} is not a regular file (a folder, device, socket or pipe)")
        if max_bytes is not None and info.st_size > max_bytes:
            raise FailedPrecondition(f"{relative} is larger than {max_bytes} bytes ({info.st_size})")
        # Bounded even when the file grows while it is read.
        data = file.read() if max_bytes is None else file.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        raise FailedPrecondition(f"{relative} grew past {max_bytes} bytes while it was read")
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
