"""The rules for a note's path: what a client may send, and how long a path may be."""

from __future__ import annotations

import pytest

from secondbrain.ingest.note_paths import is_note_path, path_length_problem


@pytest.mark.parametrize(
    "path",
    ["Note.md", "Inbox/Idea.md", "Deep/er/Path With Spaces.md", "UPPER.MD", "日本語/メモ.md", "a..b.md"],
)
def test_note_paths_accepted(path: str) -> None:
    assert is_note_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "",
        "Note.txt",
        "Note",
        ".md",
        "/etc/passwd.md",
        "../outside.md",
        "Inbox/../../outside.md",
        "Inbox/./Idea.md",
        "Inbox//Idea.md",
        "Inbox/",
        "C:/Users/me/Note.md",
        "c:Note.md",
        "Inbox\\Idea.md",
        "Note\x00.md",
        ".obsidian/workspace.md",
        ".git/notes.md",
        ".trash/Old.md",
        "Projects/.hidden/Note.md",
        ".hidden.md",
    ],
)
def test_note_paths_refused(path: str) -> None:
    assert not is_note_path(path)


def test_the_path_limit_counts_utf8_bytes() -> None:
    assert path_length_problem("a" * 1021 + ".md") == ""
    assert path_length_problem("é" * 510 + "a.md") == "", "510 characters of two bytes each and the suffix: 1,024"
    assert "1025 bytes" in path_length_problem("é" * 511 + ".md")
