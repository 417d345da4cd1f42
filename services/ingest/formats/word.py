"""Word documents (.docx): headings and paragraphs in order, tables as rows, read with python-docx."""

from __future__ import annotations

import docx
from docx.document import Document
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.paragraph import Paragraph

from secondbrain.ingest.formats.base import Extracted, Limits, Part, clean_text
from secondbrain.ingest.formats.office_zip import open_office
from secondbrain.ingest.formats.sheets import table_markdown


def extract_word(data: bytes, limits: Limits) -> Extracted:
    document = open_office(data, limits, "Word document", docx.Document)
    extracted = Extracted()
    heading, lines = "Start", []
    for block in _blocks(document):
        if isinstance(block, Paragraph):
            text = clean_text(block.text)
            if not text:
                continue
            if (block.style is not None and (block.style.name or "").startswith(("Heading", "Title"))) and len(
                text
            ) < 200:
                if lines:
                    extracted.parts.append(Part(heading, "\n\n".join(lines)))
                heading, lines = text, []
            else:
                lines.append(text)
        else:
            rows = [[clean_text(cell.text) for cell in row.cells] for row in block.rows]
            if rows:
                if lines:
                    extracted.parts.append(Part(heading, "\n\n".join(lines)))
                    lines = []
                extracted.parts.append(Part(heading, table_markdown(rows), markdown=True))
    if lines:
        extracted.parts.append(Part(heading, "\n\n".join(lines)))
    if not extracted.parts:
        extracted.unread.append("the document has no text to index")
    return extracted


def _blocks(document: Document):  # noqa: ANN202 - paragraphs and tables, in the body's order
    body = document.element.body
    for child in body.iterchildren():
        if child.tag == qn("w:p"):
            yield Paragraph(child, document)
        elif child.tag == qn("w:tbl"):
            yield Table(child, document)
