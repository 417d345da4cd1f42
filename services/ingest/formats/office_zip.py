"""Office files are zip archives: what they would unpack to is checked from the archive's directory before any
part is read, so a zip bomb (a few kilobytes that inflate to gigabytes) is refused without being inflated."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from typing import IO, TypeVar

from secondbrain.ingest.formats.base import Limits, Unreadable

# A real document's parts inflate a few times over; a bomb's, thousands.
MAX_RATIO = 200

Opened = TypeVar("Opened")


def open_office(data: bytes, limits: Limits, what: str, reader: Callable[[IO[bytes]], Opened]) -> Opened:
    """The file read by its library's `reader`, once its archive is known to unpack within `limits`; Unreadable,
    saying what the file is, when the library cannot read it (each raises whatever its XML and zip readers raise on
    a broken file)."""
    check_archive(data, limits, what)
    try:
        return reader(io.BytesIO(data))
    except Exception as error:
        raise Unreadable(f"not a {what} that can be read ({type(error).__name__}: {str(error)[:120]})") from None


def check_archive(data: bytes, limits: Limits, what: str) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise Unreadable(f"not a {what} that can be read: it is not a valid Office file ({error})") from None
    if any(member.flag_bits & 0x1 for member in members):
        raise Unreadable(f"the {what} is encrypted; save a copy without a password to index it")
    unpacked = sum(member.file_size for member in members)
    packed = max(sum(member.compress_size for member in members), 1)
    if unpacked > limits.max_unzipped_bytes or unpacked > MAX_RATIO * max(packed, 64 * 1024):
        raise Unreadable(
            f"the {what} would unpack to {unpacked:,} bytes from {len(data):,} (a zip bomb, or a file too large to "
            f"read; the limit is {limits.max_unzipped_bytes:,} bytes, ingest.max_unzipped_bytes)"
        )
