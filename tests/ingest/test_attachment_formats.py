"""Each attachment processor on files made here, and the bounded worker on hostile ones: every file fails alone,
with a reason a person can act on, within its bounds of time and memory."""

from __future__ import annotations

import shutil
import time

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from secondbrain.file_kinds import is_attachment, kind_of
from secondbrain.ingest.attachment_text import shown_in_context
from secondbrain.ingest.formats import processor
from secondbrain.ingest.formats.base import Extracted, Limits, Part, Unreadable, clean_text, escape_plain, render
from secondbrain.ingest.formats.worker import Bounds, Worker
from secondbrain.ingest.note import parse_note
from tests.ingest import files_made

LIMITS = Limits()
needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")


def extract(suffix: str, data: bytes, limits: Limits = LIMITS) -> Extracted:
    return processor(suffix)(data, limits)


def test_kinds_by_extension() -> None:
    assert is_attachment("Papers/x.PDF") and is_attachment("a.canvas") and is_attachment("b.xlsx")
    assert not is_attachment("note.md") and not is_attachment("drawing.svg") and not is_attachment("pdf")
    assert kind_of("a/b.md") == "note" and kind_of("a/b.jpeg") == "image" and kind_of("a.pptx") == "presentation"


def test_a_pdf_is_read_page_by_page() -> None:
    data = files_made.pdf([["The boiler was serviced in March."], [], ["Discount rate: 3.0 percent real."]])
    extracted = extract(".pdf", data)
    assert [(part.heading, part.page) for part in extracted.parts] == [("Page 1", 1), ("Page 3", 3)]
    assert "Discount rate: 3.0 percent real." in extracted.parts[1].text
    assert extracted.unread == []


def body(y: float, text: str) -> tuple[float, float, float, str]:
    return (72, y, 11, text)


def test_a_table_row_reads_as_its_cells_and_a_sentence_as_itself() -> None:
    row = [(72, 600, 10, "Alabama"), (200, 600, 10, "18,870"), (260, 600, 10, "0"), (290, 600, 10, "00")]
    data = files_made.laid_out_pdf([[body(700, "The checks by state, as the bureau counted them."), *row]])
    text = extract(".pdf", data).parts[0].text
    assert "The checks by state, as the bureau counted them." in text
    assert "Alabama | 18,870 | 0 | 00" in text


def test_without_an_outline_a_page_is_in_the_section_its_headings_show() -> None:
    running = (72, 760, 20, "ACME Boiler Manual")  # on every page: the running head, no section
    data = files_made.laid_out_pdf(
        [
            [running, (72, 700, 20, "Installation"), body(670, "Fit the flue first."), body(650, "Then the pump.")],
            [running, body(700, "Bleed the radiators."), body(680, "Check the pressure gauge.")],
            [
                running,
                body(700, "A last step of installing."),
                (72, 660, 20, "Servicing"),
                body(630, "Once a year, by an engineer, with the casing off and the burner cleaned."),
            ],
            [running, (72, 700, 20, "Warning: read this first."), body(670, "Turn the gas off.")],
        ]
    )
    headings = [part.heading for part in extract(".pdf", data).parts]
    # Page 3 is mostly under its own heading; a large sentence (page 4) is not a heading, so Servicing goes on.
    assert headings == ["Page 1: Installation", "Page 2: Installation", "Page 3: Servicing", "Page 4: Servicing"]


def test_pages_past_the_limit_are_not_read_and_said() -> None:
    data = files_made.pdf([[f"Page number {n} text here."] for n in range(1, 6)])
    extracted = extract(".pdf", data, Limits(max_pages=2))
    assert [part.page for part in extracted.parts] == [1, 2]
    assert extracted.unread == ["pages 3-5 not read: over the 2-page limit (ingest.max_attachment_pages)"]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"%PDF-1.4\n" + bytes(range(256)) * 40, "not a PDF that can be read"),
        (b"", "not a PDF that can be read"),
    ],
)
def test_a_broken_pdf_is_unreadable_with_its_reason(data: bytes, says: str) -> None:
    with pytest.raises(Unreadable, match=says):
        extract(".pdf", data)


def test_an_encrypted_pdf_says_to_save_it_without_a_password() -> None:
    pypdf = pytest.importorskip("pypdf")
    import io

    reader = pypdf.PdfReader(io.BytesIO(files_made.pdf([["Secret plans."]])))
    writer = pypdf.PdfWriter()
    writer.append_pages_from_reader(reader)
    writer.encrypt("open sesame")
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(Unreadable, match="encrypted with a password; save a copy without one"):
        extract(".pdf", out.getvalue())


def test_a_word_document_keeps_headings_paragraphs_and_tables() -> None:
    data = files_made.docx("Errata", ["Equation 4 has a sign error."], [["Page", "Fix"], ["12", "minus, not plus"]])
    extracted = extract(".docx", data)
    assert [part.heading for part in extracted.parts] == ["Errata", "Errata"]
    assert extracted.parts[0].text == "Equation 4 has a sign error."
    assert "| 12 | minus, not plus |" in extracted.parts[1].text


def test_slides_keep_their_titles_and_speaker_notes() -> None:
    data = files_made.pptx([("Monte Carlo", "Run 500 dispersions", "Seed is fixed at 42"), ("Results", "All pass", "")])
    extracted = extract(".pptx", data)
    assert [(part.heading, part.page) for part in extracted.parts] == [
        ("Slide 1: Monte Carlo", 1),
        ("Slide 2: Results", 2),
    ]
    assert "Speaker notes: Seed is fixed at 42" in extracted.parts[0].text


def test_a_spreadsheet_is_a_table_per_sheet_with_values() -> None:
    data = files_made.xlsx({"Budget": [["Item", "Cost"], ["Pump", 1200], ["Valve", None]], "Empty": []})
    extracted = extract(".xlsx", data)
    assert [part.heading for part in extracted.parts] == ["Sheet Budget"]
    assert extracted.parts[0].text.splitlines() == [
        "| Item | Cost |",
        "| --- | --- |",
        "| Pump | 1200 |",
        "| Valve |  |",
    ]


def test_a_canvas_reads_cards_groups_edges_and_file_links() -> None:
    data = files_made.canvas(["# Plan\nShip the installer", "Test on Wayland"], ["Notes/Setup.md"], [(0, 1, "before")])
    extracted = extract(".canvas", data)
    assert [part.heading for part in extracted.parts] == ["Plan", "Test on Wayland", "Connections"]
    assert "- Plan → Test on Wayland: before" in extracted.parts[-1].text
    assert extracted.links == ["Notes/Setup.md"]


@pytest.mark.parametrize(
    ("suffix", "data", "says"),
    [
        (".canvas", b"{not json", "its JSON is broken"),
        (".canvas", b"[1, 2]", "not a canvas"),
        (".canvas", b'{"nodes": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "JSON is broken"),
        (".docx", b"PK\x03\x04 not really a zip", "not a valid Office file"),
        (".xlsx", b"hello", "not a valid Office file"),
        (".png", b"<html>not a picture</html>", "not a picture that can be read"),
    ],
)
def test_files_that_are_not_what_their_name_says_are_unreadable(suffix: str, data: bytes, says: str) -> None:
    with pytest.raises(Unreadable, match=says):
        extract(suffix, data)


def test_a_canvas_of_50000_cards_is_refused_by_its_count() -> None:
    with pytest.raises(Unreadable, match=r"50,000 cards .* over the 10,000 limit \(ingest.max_canvas_nodes\)"):
        extract(".canvas", files_made.canvas([f"card {n}" for n in range(50_000)]))


def test_a_picture_claiming_100000_by_100000_pixels_is_refused_from_its_header() -> None:
    with pytest.raises(Unreadable, match="claims more pixels"):
        extract(".png", files_made.png_claiming(100_000, 100_000))
    with pytest.raises(Unreadable, match=r"9,000 x 9,000 pixels, over the 50,000,000-pixel limit"):
        extract(".png", files_made.png_claiming(9_000, 9_000))


def test_a_zip_bomb_of_a_docx_is_refused_before_it_is_inflated() -> None:
    started = time.perf_counter()
    with pytest.raises(Unreadable, match=r"would unpack to .*a zip bomb"):
        extract(".docx", files_made.zip_bomb_docx(300 * 1024 * 1024))
    assert time.perf_counter() - started < 30  # (a generous bound: inflating it would take longer and 300 MB)


@needs_tesseract
def test_a_picture_of_text_is_read_by_ocr() -> None:
    extracted = extract(".png", files_made.picture_of_text(["Realtime overrun limit", "Frame rate 100 Hz"]))
    assert "overrun" in extracted.parts[0].text.lower() and "100" in extracted.parts[0].text


def test_without_ocr_a_picture_says_its_text_was_not_read() -> None:
    extracted = extract(".png", files_made.picture_of_text(["Hello"]), Limits(ocr=False))
    assert extracted.parts == [] and extracted.unread == ["its text was not read: OCR is off (ingest.ocr)"]


def test_the_rendering_is_a_note_whose_headings_are_the_places_and_whose_lines_know_their_page() -> None:
    extracted = Extracted(
        parts=[Part("Page 1", "# not a heading\n#notatag [[not a link]]", page=1), Part("Page 2", "Two", page=2)],
        links=["Notes/Setup.md"],
    )
    rendering = render("Guide.pdf", extracted)
    note = parse_note("Manuals/Guide.pdf", rendering.text)
    assert note.title == "Guide.pdf" and note.tags == []
    assert [link.target for link in note.links] == ["Notes/Setup.md"]
    lines = rendering.text.split("\n")
    two = lines.index("Two") + 1
    assert rendering.pages_of(two, two) == (2, 2) and rendering.pages_of(1, two) == (1, 2)


@settings(max_examples=300, deadline=None)
# A PDF's equations, as PDFium gives them: a line of '=' or '-' alone under a line of text.
@example("∂e\n∂xc\n=\n1\nμ")
@example("total\n-\n12")
@example("Results\n- - -")
# Inside a blockquote or a list item, where each is a heading too.
@example(">#")
@example("> # Quoted\n- # Listed\n1) # Numbered\n> text\n> ===")
@given(st.text(alphabet=st.sampled_from("ab #=-*_>[]!|`~\n\t"), max_size=60) | st.text())
def test_escaped_text_never_makes_a_heading_tag_or_link(text: str) -> None:
    escaped = escape_plain(clean_text(text))
    rendered = f"# a.pdf\n\n## Page 1\n\n{escaped}\n"
    note = parse_note("a.pdf", rendered)
    assert note.tags == [] and note.links == []
    # As a markdown reader parses it (a line of '=' under text would make that text a heading): ours only.
    headings = [token for token in MarkdownIt("commonmark").parse(rendered) if token.type == "heading_open"]
    assert len(headings) == 2, escaped


def test_the_worker_bounds_time_and_memory_and_carries_on_after_each_failure() -> None:
    worker = Worker(Bounds(seconds=1.0, memory_bytes=512 * 1024**2))
    many_pages = Limits(max_pages=100_000)
    try:
        assert worker.extract(".canvas", files_made.canvas(["Warm."]), LIMITS).parts[0].text == "Warm."
        # 30,000 pages of text take PDFium about 5 s.
        with pytest.raises(Unreadable, match=r"reading it took longer than 1 s \(ingest.attachment_seconds\)"):
            worker.extract(".pdf", files_made.pdf([[f"line {n}" for n in range(40)]] * 30_000), many_pages)
        assert worker.extract(".pdf", files_made.pdf([["Still working."]]), LIMITS).parts[0].text == "Still working."
    finally:
        worker.close()


def test_a_pdf_bomb_fails_on_the_memory_bound_and_the_next_file_is_read() -> None:
    worker = Worker(Bounds(seconds=60.0, memory_bytes=512 * 1024**2))
    try:
        # A megabyte that inflates to a gigabyte: PDFium cannot have it within 512 MB, and the worker dies of it.
        with pytest.raises(Unreadable, match=r"more memory than the 512 MB allowed \(ingest.attachment_memory_mb\)"):
            worker.extract(".pdf", files_made.pdf_bomb(1024 * 1024 * 1024), LIMITS)
        after = worker.extract(".canvas", files_made.canvas(["After the bomb."]), LIMITS)
        assert after.parts[0].text == "After the bomb."
    finally:
        worker.close()


def test_the_notes_an_attachment_is_shown_in_make_one_short_line_of_context() -> None:
    assert shown_in_context([]) == ""
    shown = [("Boiler", "- The manual: ![[Boiler manual.pdf]] (read p. 3)"), ("Home", "![[Boiler manual.pdf]]")]
    assert shown_in_context(shown) == "Shown in Boiler: The manual: (read p. 3); Home"
    long = shown_in_context([("Note", "word " * 100)])
    assert len(long) == 160 and long.endswith("…")
