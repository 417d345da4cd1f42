"""Spreadsheets (.xlsx): each sheet a table of its used rows (values, not formulas), read with openpyxl."""

from __future__ import annotations

import openpyxl

from secondbrain.ingest.formats.base import Extracted, Limits, Part, Unreadable
from secondbrain.ingest.formats.office_zip import open_office

# Rows of a sheet per part: a passage is then a screen of a table, each repeating the header row.
ROWS_PER_PART = 40


def extract_sheets(data: bytes, limits: Limits) -> Extracted:
    workbook = open_office(
        data, limits, "spreadsheet", lambda file: openpyxl.load_workbook(file, read_only=True, data_only=True)
    )
    extracted = Extracted()
    cells = 0
    try:
        for sheet in workbook.worksheets:
            rows: list[list[str]] = []
            for row in sheet.iter_rows(values_only=True):
                cells += len(row)
                if cells > limits.max_sheet_cells:
                    raise Unreadable(
                        f"the spreadsheet has more than {limits.max_sheet_cells:,} cells "
                        "(ingest.max_sheet_cells); split it to index it"
                    )
                values = ["" if value is None else str(value).strip() for value in row]
                if any(values):
                    rows.append(values)
            width = max((max((i for i, v in enumerate(row) if v), default=-1) for row in rows), default=-1) + 1
            rows = [row[:width] for row in rows]
            for start in range(1, max(len(rows), 1), ROWS_PER_PART):
                block = [rows[0], *rows[start : start + ROWS_PER_PART]] if len(rows) > 1 else rows
                extracted.parts.append(Part(f"Sheet {sheet.title}", table_markdown(block), markdown=True))
    finally:
        workbook.close()
    if not extracted.parts:
        extracted.unread.append("the spreadsheet has no values to index")
    return extracted


def table_markdown(rows: list[list[str]]) -> str:
    """Rows as a markdown table, the first row its header (cells' pipes and line breaks escaped)."""
    width = max(len(row) for row in rows)
    cleaned = [
        [cell.replace("|", "\\|").replace("\n", " ") for cell in row] + [""] * (width - len(row)) for row in rows
    ]
    lines = ["| " + " | ".join(cleaned[0]) + " |", "|" + " --- |" * width]
    lines.extend("| " + " | ".join(row) + " |" for row in cleaned[1:])
    return "\n".join(lines)
