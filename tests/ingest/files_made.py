"""Attachment files made in a test: PDFs written object by object (text pages, a page whose content stream inflates
to hundreds of megabytes), Office files made with their own libraries, pictures drawn with Pillow, and files that
lie about themselves."""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont


def pdf(pages: list[list[str]], *, streams: list[bytes] | None = None) -> bytes:
    """A PDF of `pages`, each a list of lines set in Helvetica (ASCII only); `streams`, when given, are the pages'
    content streams as they are (compressed with Flate), in place of the text."""
    contents = streams if streams is not None else [_text_stream(lines) for lines in pages]
    count = len(contents)
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(f"{4 + 2 * i} 0 R".encode() for i in range(count))
        + b"] /Count "
        + str(count).encode()
        + b" >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for index, stream in enumerate(contents):
        content_number = 5 + 2 * index
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {content_number} 0 R >>".encode()
        )
        compressed = stream if streams is not None else zlib.compress(stream)
        objects.append(
            f"<< /Length {len(compressed)} /Filter /FlateDecode >>\nstream\n".encode() + compressed + b"\nendstream"
        )
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def _text_stream(lines: list[str]) -> bytes:
    commands = ["BT", "/F1 12 Tf", "72 720 Td", "14 TL"]
    for line in lines:
        escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        commands.append(f"({escaped}) Tj T*")
    commands.append("ET")
    return "\n".join(commands).encode("latin-1")


def laid_out_pdf(pages: list[list[tuple[float, float, float, str]]]) -> bytes:
    """A PDF of `pages`, each a list of (x, y, type size, text) set where they say, in Helvetica: a table's cells
    side by side, a heading larger than its body."""
    streams = []
    for items in pages:
        commands = []
        for x, y, size, text in items:
            escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            commands.append(f"BT /F1 {size} Tf {x} {y} Td ({escaped}) Tj ET")
        streams.append(zlib.compress("\n".join(commands).encode("latin-1")))
    return pdf([[] for _ in pages], streams=streams)


def pdf_bomb(inflated_bytes: int) -> bytes:
    """A one-page PDF whose content stream is a few hundred kilobytes that inflate to `inflated_bytes` of spaces."""
    squeezer = zlib.compressobj(9)
    block = b" " * (1024 * 1024)
    parts = [squeezer.compress(block) for _ in range(inflated_bytes // len(block))]
    parts.append(squeezer.flush())
    return pdf([[]], streams=[b"".join(parts)])


def zip_bomb_docx(inflated_bytes: int) -> bytes:
    """A .docx whose document part inflates to `inflated_bytes`."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            block = b" " * (1024 * 1024)
            for _ in range(inflated_bytes // len(block)):
                member.write(block)
    return out.getvalue()


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims `width` x `height` pixels, with almost no pixel data behind it."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )


def picture_of_text(lines: list[str]) -> bytes:
    """A PNG of `lines` in large dark type on white, as a screenshot of a settings page would be."""
    font = ImageFont.load_default(size=36)
    image = Image.new("L", (1400, 90 + 60 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for index, line in enumerate(lines):
        draw.text((40, 40 + 60 * index), line, fill=0, font=font)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def docx(heading: str, paragraphs: list[str], table: list[list[str]] | None = None) -> bytes:
    import docx as python_docx

    document = python_docx.Document()
    document.add_heading(heading, level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx(slides: list[tuple[str, str, str]]) -> bytes:
    """Slides of (title, body, speaker notes)."""
    import pptx as python_pptx

    presentation = python_pptx.Presentation()
    for title, body, notes in slides:
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def xlsx(sheets: dict[str, list[list[object]]]) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(row)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def canvas(cards: list[str], files: list[str] = (), edges: list[tuple[int, int, str]] = ()) -> bytes:
    nodes = [
        {"id": f"t{i}", "type": "text", "text": text, "x": 0, "y": 300 * i, "width": 250, "height": 200}
        for i, text in enumerate(cards)
    ]
    nodes += [
        {"id": f"f{i}", "type": "file", "file": name, "x": 400, "y": 300 * i, "width": 250, "height": 200}
        for i, name in enumerate(files)
    ]
    links = [
        {"id": f"e{i}", "fromNode": f"t{a}", "toNode": f"t{b}", "label": label} for i, (a, b, label) in enumerate(edges)
    ]
    return json.dumps({"nodes": nodes, "edges": links}).encode()


def write(root: Path, relative: str, data: bytes) -> Path:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target
