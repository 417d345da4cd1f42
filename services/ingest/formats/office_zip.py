"""Office files are zip archives: what they would unpack to is checked from the archive's directory before any
part is read, so a zip bomb (a few kilobytes that inflate to gigabytes) is refused without being inflated."""

from __future__ import annotations

import io
import zipfile

from secondbrain.ingest.formats.base import Limits, Unreadable

# A real document's parts inflate a few times over; a bomb's, thousands.
MAX_RATIO = 200


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
