"""Attachments: the files of a vault that are not notes, one processor per format over a shared base (`base`).

`extract` reads a file's bytes in a worker process bounded in time and memory (`worker`), so a hostile file (a PDF
bomb, a zip bomb, a picture claiming a billion pixels) fails alone with its reason and never takes ingest with it.
"""

from __future__ import annotations

from collections.abc import Callable

from secondbrain.ingest.formats.base import Extracted, Limits

# The file types indexed beside notes, by extension, and what a person calls each (`status` counts them so).
KINDS: dict[str, str] = {
    ".pdf": "PDF",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".webp": "image",
    ".canvas": "canvas",
    ".docx": "Word document",
    ".pptx": "presentation",
    ".xlsx": "spreadsheet",
}
# The plural of each kind that does not just add an s.
PLURALS = {"canvas": "canvases"}


def suffix_of(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if dot > name.rfind("/") else ""


def is_attachment(name: str) -> bool:
    """Whether the vault file `name` is indexed as an attachment (by its extension)."""
    return suffix_of(name) in KINDS


def kind_of(name: str) -> str:
    """'note' for markdown, else the attachment's kind ('PDF', 'image', 'presentation', ...), else ''."""
    if name.lower().endswith(".md"):
        return "note"
    return KINDS.get(suffix_of(name), "")


def processor(suffix: str) -> Callable[[bytes, Limits], Extracted]:
    """The function that reads a file of this extension; imported here, in the worker, so ingest's own process
    never loads a parser."""
    if suffix == ".pdf":
        from secondbrain.ingest.formats.pdf import extract_pdf

        return extract_pdf
    if suffix in (".png", ".jpg", ".jpeg", ".webp"):
        from secondbrain.ingest.formats.image import extract_image

        return extract_image
    if suffix == ".canvas":
        from secondbrain.ingest.formats.canvas import extract_canvas

        return extract_canvas
    if suffix == ".docx":
        from secondbrain.ingest.formats.word import extract_word

        return extract_word
    if suffix == ".pptx":
        from secondbrain.ingest.formats.slides import extract_slides

        return extract_slides
    if suffix == ".xlsx":
        from secondbrain.ingest.formats.sheets import extract_sheets

        return extract_sheets
    raise KeyError(suffix)
