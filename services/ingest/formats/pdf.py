"""PDFs: each page's text layer read by PDFium (pypdfium2: the fastest and most faithful of the eight libraries
measured in docs/attachment-parsers.md, permissively licensed), in reading order with table rows' cells apart
(`pdf_layout`); each page's section from the PDF's outline, or where it has none from the headings its layout
shows; a page with no usable layer, mostly picture, is read by OCR."""

from __future__ import annotations

import re

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from secondbrain.ingest.formats import pdf_layout
from secondbrain.ingest.formats.base import Extracted, Limits, Part, Unreadable, clean_text
from secondbrain.ingest.formats.ocr import INSTALL, PAGE, OcrFailed, ocr_available, read_picture

# A page is read by OCR when its layer holds fewer characters of words than this and pictures cover at least
# PICTURE_SHARE of it: that picks the scans and the image-only slides of the attachments vault, and leaves blank and
# nearly empty pages (a page number, "DRAFT") alone, where OCR would find nothing (docs/attachment-parsers.md).
WORD_CHARACTERS = 50
PICTURE_SHARE = 0.25
# OCR reads a page rendered at 300 dpi, in grey, at most this many pixels (a poster-sized page is rendered finer
# than that would allow at a lower dpi).
OCR_DPI = 300
OCR_MAX_PIXELS = 25_000_000
_WORD = re.compile(r"[^\W\d_]{2,}")
# Outline entries read (a PDF's bookmarks, its own table of contents), and the characters of a title kept.
MAX_OUTLINE_ENTRIES = 10_000
MAX_SECTION_CHARACTERS = 80


def extract_pdf(data: bytes, limits: Limits) -> Extracted:
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as error:
        raise Unreadable(_why_not_opened(str(error))) from None
    try:
        return _pages(document, limits)
    finally:
        document.close()


def _why_not_opened(said: str) -> str:
    if "password" in said.lower():
        return "the PDF is encrypted with a password; save a copy without one to index it"
    return f"not a PDF that can be read ({said}); open it and save it again, or remove it"


def _pages(document: pdfium.PdfDocument, limits: Limits) -> Extracted:
    extracted = Extracted()
    count = len(document)
    read = min(count, limits.max_pages)
    layers = [_layer(document, number) for number in range(1, read + 1)]
    sections = _sections(document, read) or pdf_layout.sections(layers)
    not_ocred: list[int] = []
    ocr_failures: list[str] = []
    for number in range(1, read + 1):
        text = clean_text(pdf_layout.page_text(layers[number - 1]))
        page = document[number - 1]
        try:
            if _words(text) < WORD_CHARACTERS and _picture_share(page) >= PICTURE_SHARE:
                if not (limits.ocr and ocr_available()):
                    not_ocred.append(number)
                else:
                    try:
                        seen = read_picture(_rendered(page), PAGE, limits.ocr_seconds)
                    except OcrFailed as error:
                        ocr_failures.append(f"page {number}: {error}")
                    else:
                        text = f"{text}\n\n{seen}".strip() if text else seen
        finally:
            page.close()
        if text:
            section = sections.get(number)
            heading = f"Page {number}: {section}" if section else f"Page {number}"
            extracted.parts.append(Part(heading, text, page=number))
    if count > limits.max_pages:
        extracted.unread.append(
            f"pages {limits.max_pages + 1}-{count} not read: over the {limits.max_pages}-page limit "
            "(ingest.max_attachment_pages)"
        )
    if not_ocred:
        reason = "OCR is off (ingest.ocr)" if not limits.ocr else INSTALL
        verbs = "has no text layer and was" if len(not_ocred) == 1 else "have no text layer and were"
        extracted.unread.append(f"{_pages_named(not_ocred)} {verbs} not read: {reason}")
    extracted.unread.extend(ocr_failures)
    if not extracted.parts and count:
        extracted.unread.append("no page has text to index")
    return extracted


def _layer(document: pdfium.PdfDocument, number: int) -> list[pdf_layout.Line]:
    page = document[number - 1]
    try:
        return pdf_layout.page_lines(page)
    finally:
        page.close()


def _sections(document: pdfium.PdfDocument, pages: int) -> dict[int, str]:
    """Each page's section, from the PDF's outline (its bookmarks: the headings its author or tool marked): the title
    of the last entry, in outline order, that starts on or before the page. {} when the PDF has no outline."""
    starts: list[tuple[int, str]] = []
    try:
        for index, mark in enumerate(document.get_toc()):
            if index >= MAX_OUTLINE_ENTRIES:
                break
            destination = mark.get_dest()
            page = destination.get_index() if destination is not None else None
            title = " ".join(clean_text(mark.get_title() or "").split())
            if page is not None and title:
                starts.append((page + 1, title[:MAX_SECTION_CHARACTERS]))
    except pdfium.PdfiumError:
        return {}
    sections: dict[int, str] = {}
    for number in range(1, pages + 1):
        started = [title for first, title in starts if first <= number]
        if started:
            sections[number] = started[-1]
    return sections


def _words(text: str) -> int:
    return sum(len(word) for word in _WORD.findall(text))


def _picture_share(page: pdfium.PdfPage) -> float:
    """How much of the page its pictures cover (their bounding boxes, overlaps counted twice, at most 1)."""
    width, height = page.get_size()
    if width <= 0 or height <= 0:
        return 0.0
    covered = 0.0
    for picture in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=3):
        left, bottom, right, top = picture.get_bounds()
        covered += max(0.0, min(right, width) - max(left, 0.0)) * max(0.0, min(top, height) - max(bottom, 0.0))
    return min(covered / (width * height), 1.0)


def _rendered(page: pdfium.PdfPage):  # noqa: ANN202 - a PIL image
    width, height = page.get_size()
    scale = min(OCR_DPI / 72, (OCR_MAX_PIXELS / max(width * height, 1.0)) ** 0.5)
    return page.render(scale=scale, grayscale=True).to_pil()


def _pages_named(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:20])
    more = f" and {len(numbers) - 20} more" if len(numbers) > 20 else ""
    return f"page {shown}" if len(numbers) == 1 else f"pages {shown}{more}"
