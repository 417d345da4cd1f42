"""Presentations (.pptx): each slide's title, text, tables and speaker notes, read with python-pptx."""

from __future__ import annotations

import pptx

from secondbrain.ingest.formats.base import Extracted, Limits, Part, clean_text
from secondbrain.ingest.formats.office_zip import open_office
from secondbrain.ingest.formats.sheets import table_markdown


def extract_slides(data: bytes, limits: Limits) -> Extracted:
    presentation = open_office(data, limits, "presentation", pptx.Presentation)
    extracted = Extracted()
    for number, slide in enumerate(presentation.slides, start=1):
        if number > limits.max_pages:
            extracted.unread.append(f"slides from {number} on not read: over the {limits.max_pages}-page limit")
            break
        title = ""
        if slide.shapes.title is not None and slide.shapes.title.has_text_frame:
            title = clean_text(slide.shapes.title.text_frame.text)
        texts: list[str] = []
        for shape in slide.shapes:
            if shape == slide.shapes.title:
                continue
            if shape.has_text_frame and (text := clean_text(shape.text_frame.text)):
                texts.append(text)
            elif getattr(shape, "has_table", False) and shape.has_table:
                rows = [[clean_text(cell.text) for cell in row.cells] for row in shape.table.rows]
                if rows:
                    texts.append(table_markdown(rows))
        if slide.has_notes_slide and (notes := clean_text(slide.notes_slide.notes_text_frame.text)):
            texts.append(f"Speaker notes: {notes}")
        body = "\n\n".join(part for part in [title, *texts] if part)
        if body:
            heading = f"Slide {number}: {title}" if title else f"Slide {number}"
            extracted.parts.append(Part(heading, body, page=number, markdown=False))
    if not extracted.parts:
        extracted.unread.append("the presentation has no text to index")
    return extracted
