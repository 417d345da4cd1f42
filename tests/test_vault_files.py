"""read_inside: a vault's file read without being led out of the vault, however the path changes under it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from secondbrain.errors import FailedPrecondition, NotFound
from secondbrain.vault_files import OutsideVault, read_inside


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "Notes").mkdir(parents=True)
    (root / "Notes" / "Plan.md").write_text("# Plan\n")
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "workspace.md").write_text("# hidden\n")
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "agents" / "Coach.md").write_text("# Coach\n")
    (tmp_path / "outside.md").write_text("# Outside\n")
    return root


def test_a_plain_file_and_links_that_stay_inside_are_read(vault: Path) -> None:
    assert read_inside(vault, "Notes/Plan.md") == b"# Plan\n"
    (vault / "Linked.md").symlink_to(vault / "Notes" / "Plan.md")
    (vault / "Shortcut").symlink_to(vault / "Notes", target_is_directory=True)
    assert read_inside(vault, "Linked.md") == b"# Plan\n"
    assert read_inside(vault, "Shortcut/Plan.md") == b"# Plan\n"
    # A file of a hidden folder read by its own path (personas) stays readable.
    assert read_inside(vault, ".claude/agents/Coach.md") == b"# Coach\n"


def test_links_out_of_the_vault_or_into_a_hidden_folder_are_refused(vault: Path) -> None:
    (vault / "Out.md").symlink_to(vault.parent / "outside.md")
    (vault / "Away").symlink_to(vault.parent, target_is_directory=True)
    (vault / "Hidden.md").symlink_to(vault / ".obsidian" / "workspace.md")
    with pytest.raises(OutsideVault, match=r"Out\.md is a symlink to outside the vault") as raised:
        read_inside(vault, "Out.md")
    # Where it points is the server's business, not an API client's (found by a probe: "(/etc/passwd)").
    assert str(vault.parent) not in str(raised.value)
    with pytest.raises(OutsideVault, match="outside the vault"):
        read_inside(vault, "Away/outside.md")
    with pytest.raises(OutsideVault, match=r"hidden folder \.obsidian"):
        read_inside(vault, "Hidden.md")
    with pytest.raises(OutsideVault):
        read_inside(vault, "../outside.md")


def test_a_link_put_in_place_after_the_check_is_not_followed(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The race itself, made certain: the path is judged as a plain file, then swapped for a link before it opens.
    real_realpath = os.path.realpath
    target = vault / "Notes" / "Plan.md"

    def swap_after_judging(path: object) -> str:
        resolved = real_realpath(path)
        if str(path).endswith("Plan.md") and not target.is_symlink():
            target.unlink()
            target.symlink_to(vault.parent / "outside.md")
        return resolved

    monkeypatch.setattr("secondbrain.vault_files.os.path.realpath", swap_after_judging)
    with pytest.raises(FailedPrecondition, match="changed while it was read"):
        read_inside(vault, "Notes/Plan.md")


def test_a_folder_swapped_for_a_link_after_the_check_is_not_followed(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_realpath = os.path.realpath
    (vault.parent / "elsewhere").mkdir()
    (vault.parent / "elsewhere" / "Plan.md").write_text("# Elsewhere\n")

    def swap_after_judging(path: object) -> str:
        resolved = real_realpath(path)
        if str(path).endswith("Plan.md") and not (vault / "Notes").is_symlink():
            (vault / "Notes" / "Plan.md").unlink()
            (vault / "Notes").rmdir()
            (vault / "Notes").symlink_to(vault.parent / "elsewhere", target_is_directory=True)
        return resolved

    monkeypatch.setattr("secondbrain.vault_files.os.path.realpath", swap_after_judging)
    with pytest.raises(FailedPrecondition, match="changed while it was read"):
        read_inside(vault, "Notes/Plan.md")


def test_a_pipe_is_refused_without_waiting_for_a_writer(vault: Path) -> None:
    os.mkfifo(vault / "Pipe.md")
    with pytest.raises(FailedPrecondition, match="not a regular file"):
        read_inside(vault, "Pipe.md")


def test_missing_files_and_size_bounds(vault: Path) -> None:
    with pytest.raises(NotFound, match=r"Gone\.md no longer exists"):
        read_inside(vault, "Gone.md")
    with pytest.raises(FailedPrecondition, match="larger than 3 bytes"):
        read_inside(vault, "Notes/Plan.md", max_bytes=3)
    assert read_inside(vault, "Notes/Plan.md", max_bytes=7) == b"# Plan\n"
