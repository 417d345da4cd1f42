"""The kinds of file a vault's index holds, by extension: notes, and the attachments indexed beside them (PDFs,
pictures, canvases, Office files). One table for every part that names them: ingest's walk and parsers, retrieval's
file-type filter, the evaluation's figures per type and `status`'s counts."""

from __future__ import annotations

NOTE = "note"
# Each attachment extension and what a person calls that kind of file.
ATTACHMENT_KINDS: dict[str, str] = {
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
# The names a file-type filter takes (lower case), and the extensions each selects.
FILTER_TYPES: dict[str, tuple[str, ...]] = {
    "note": (".md",),
    "pdf": (".pdf",),
    "image": (".png", ".jpg", ".jpeg", ".webp"),
    "canvas": (".canvas",),
    "word": (".docx",),
    "presentation": (".pptx",),
    "spreadsheet": (".xlsx",),
}


def suffix_of(name: str) -> str:
    """The extension of a file name or path, lower case with its dot; "" when it has none."""
    dot = name.rfind(".")
    return name[dot:].lower() if dot > name.rfind("/") else ""


def is_attachment(name: str) -> bool:
    """Whether the vault file `name` is indexed as an attachment (by its extension)."""
    return suffix_of(name) in ATTACHMENT_KINDS


def kind_of(name: str) -> str:
    """'note' for markdown, else the attachment's kind ('PDF', 'image', 'presentation', ...), else ''."""
    if name.lower().endswith(".md"):
        return NOTE
    return ATTACHMENT_KINDS.get(suffix_of(name), "")
