"""Attachments: the files of a vault that are not notes, one processor per format over a shared base (`base`).

`worker.Worker.extract` reads a file's bytes in a process bounded in time and memory, so a hostile file (a PDF
bomb, a zip bomb, a picture claiming a billion pixels) fails alone with its reason and never takes ingest with it.
"""

from __future__ import annotations

from collections.abc import Callable

from secondbrain.ingest.formats.base import Extracted, Limits


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
