"""An attachment's text for the index: its bytes read from the vault, parsed in the bounded worker, rendered to
markdown with its pages (formats.base.render), so that from there it is indexed as a note is."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from secondbrain.errors import FailedPrecondition
from secondbrain.file_kinds import suffix_of
from secondbrain.ingest.formats.base import Limits, Rendering, render
from secondbrain.ingest.formats.worker import Bounds, worker_for
from secondbrain.ingest.vault_walk import VaultFile
from secondbrain.vault_config import IngestSection
from secondbrain.vault_files import read_inside


@dataclass(frozen=True)
class AttachmentText:
    """What an attachment is indexed as: its rendering, the hash of its bytes (what "unchanged" is judged by, so
    an unchanged file is never parsed again) and what of it could not be read (warnings on its status)."""

    rendering: Rendering
    content_hash: str
    unread: tuple[str, ...]


def read_attachment_bytes(file: VaultFile, section: IngestSection) -> bytes:
    """The file's bytes, read inside the vault (as a note is: no link out, no second hard link), within
    ingest.max_attachment_file_bytes; FailedPrecondition (or its kinds) when it cannot be."""
    try:
        return read_inside(file.vault, file.on_disk, section.max_attachment_file_bytes, one_name=True)
    except OSError as error:
        raise FailedPrecondition(f"cannot read {file.path}: {error.strerror or error}") from None


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def limits_of(section: IngestSection) -> Limits:
    return Limits(
        max_pages=section.max_attachment_pages,
        max_pixels=section.max_picture_pixels,
        max_canvas_nodes=section.max_canvas_nodes,
        max_unzipped_bytes=section.max_unzipped_bytes,
        max_sheet_cells=section.max_sheet_cells,
        ocr=section.ocr,
        ocr_seconds=min(60.0, section.attachment_seconds),
    )


def bounds_of(section: IngestSection) -> Bounds:
    return Bounds(seconds=section.attachment_seconds, memory_bytes=section.attachment_memory_mb * 1024**2)


# The notes an attachment's context names, and the characters it takes: a line of context, not a summary (it is
# embedded with every passage of the file, in the room the chunker leaves for a context line).
SHOWN_IN_NOTES = 3
SHOWN_IN = "Shown in "
SHOWN_IN_CHARACTERS = 160
_LINK = re.compile(r"!?\[\[[^\]]*\]\]")
_MARKERS = re.compile(r"^\s*(?:[-*+>]|\d+[.)]|#{1,6})\s*")


def shown_in_context(shown: list[tuple[str, str]]) -> str:
    """The context of every passage of an attachment: the notes it is shown in, each with what its line says
    beside the embed (`Shown in Boiler: The manual:`), so a question in the note's words finds the file too. ""
    when no note shows it."""
    parts = []
    for title, line in shown:
        said = " ".join(_MARKERS.sub("", _LINK.sub(" ", line)).split())
        parts.append(f"{title}: {said}" if said else title)
    if not parts:
        return ""
    text = SHOWN_IN + "; ".join(parts)
    return text if len(text) <= SHOWN_IN_CHARACTERS else text[: SHOWN_IN_CHARACTERS - 1].rstrip() + "…"


def attachment_text(path: str, data: bytes, section: IngestSection) -> AttachmentText:
    """`data` (the file at vault path `path`) parsed in the bounded worker and rendered; formats.base.Unreadable
    with the reason when it cannot be read. Blocking: run it in a thread."""
    extracted = worker_for(bounds_of(section)).extract(suffix_of(path), data, limits_of(section))
    name = path.rsplit("/", 1)[-1]
    return AttachmentText(render(name, extracted), content_hash(data), tuple(extracted.unread))
