"""A stored chunk's text without the `Title > Heading` line ingest writes first."""

from __future__ import annotations

from secondbrain.retrieve.chunk_text import body_of, without_prefix


def test_body_of_drops_the_prefix_line() -> None:
    assert body_of("Title > Heading\n\nThe text.\n\nMore.") == "The text.\n\nMore."


def test_a_snippet_drops_only_a_line_that_names_the_note() -> None:
    assert without_prefix("Title > Heading\n\nThe text.", "Title", ["Heading"]) == "The text."
    assert without_prefix("A very long title th…\n\nThe text.", "A very long title that goes on", []) == "The text."
    assert without_prefix("Other > Heading\n\nThe text.", "Title", ["Heading"]) == "The text."
    assert without_prefix("First paragraph.\n\nThe text.", "Title", ["Heading"]) == "First paragraph.\n\nThe text."
    assert without_prefix("No blank line.", "Title", []) == "No blank line."
