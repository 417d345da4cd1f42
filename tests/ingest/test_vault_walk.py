"""walk_vault and read_note_text: which files are notes, read safely, named safely."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from secondbrain.errors import ConfigError, FailedPrecondition, InvalidInput, NotFound
from secondbrain.ingest.vault_walk import SizeLimit, VaultFile, list_folder, read_note_text, walk_vault
from secondbrain.vault_files import OutsideVault
from tests.ingest.conftest import write_raw

FIXTURE = Path(__file__).parent.parent / "data" / "vault"
ALL_NOTES = [
    "Archive/Old.md",
    "Drawings/Sketch.excalidraw.md",
    "Home.md",
    "Malformed.md",
    "Projects/Plan.md",
    "Projects/Research/Reading List.md",
    "SHOUTING.MD",
    "Templates/Daily.md",
]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A writable copy of the fixture vault, for symlinks and binary files."""
    root = tmp_path / "vault"
    shutil.copytree(FIXTURE, root)
    return root


def paths(root: Path, ignore: tuple[str, ...] = (), **options) -> list[str]:
    files, _ = walk_vault(root, ignore, **options)
    return [file.path for file in files]


def write(root: Path, relative: str, text: str = "# Note\n") -> Path:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


# --- what is a note ---------------------------------------------------------------------------------------------


def test_every_markdown_file_outside_dot_folders_sorted_by_path() -> None:
    files, skipped = walk_vault(FIXTURE)
    assert [file.path for file in files] == ALL_NOTES
    assert skipped == []


def test_vault_file_carries_size_mtime_and_an_absolute_path() -> None:
    files, _ = walk_vault(FIXTURE)
    home = next(file for file in files if file.path == "Home.md")
    info = (FIXTURE / "Home.md").stat()
    assert home.absolute.is_absolute() and home.absolute.samefile(FIXTURE / "Home.md")
    assert (home.size, home.mtime) == (info.st_size, info.st_mtime)


def test_ignore_patterns_from_the_vault_config() -> None:
    ignore = ("Archive/**", "Templates/*", "*.excalidraw.md")
    assert paths(FIXTURE, ignore) == [
        "Home.md",
        "Malformed.md",
        "Projects/Plan.md",
        "Projects/Research/Reading List.md",
        "SHOUTING.MD",
    ]


@pytest.mark.parametrize(
    ("pattern", "ignored"),
    [
        ("Archive/**", {"Archive/a.md", "Archive/deep/b.md"}),
        ("Archive", {"Archive/a.md", "Archive/deep/b.md", "Notes/Archive/c.md"}),
        ("Archive/", {"Archive/a.md", "Archive/deep/b.md", "Notes/Archive/c.md"}),
        ("Templates/*", {"Templates/t.md", "Templates/sub/u.md"}),
        ("**/drafts/*", {"drafts/d.md", "Notes/drafts/e.md"}),
        ("*.excalidraw.md", {"x.excalidraw.md", "Notes/y.excalidraw.md"}),
        ("Notes/?.md", {"Notes/z.md"}),
        ("Notes/[xz].md", {"Notes/z.md"}),
        ("/Archive/deep", {"Archive/deep/b.md"}),
    ],
)
def test_glob_semantics(tmp_path: Path, pattern: str, ignored: set[str]) -> None:
    every = [
        "Archive/a.md",
        "Archive/deep/b.md",
        "Notes/Archive/c.md",
        "Notes/z.md",
        "Notes/long.md",
        "Notes/y.excalidraw.md",
        "Notes/drafts/e.md",
        "Templates/t.md",
        "Templates/sub/u.md",
        "drafts/d.md",
        "x.excalidraw.md",
        "keep.md",
    ]
    for relative in every:
        write(tmp_path, relative)
    assert set(every) - set(paths(tmp_path, (pattern,))) == ignored


def test_an_invalid_ignore_pattern_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ingest.ignore: 'Notes/\[z-a\].md' is not a valid glob pattern"):
        walk_vault(tmp_path, ("Notes/[z-a].md",))


def test_dot_folders_are_never_walked(vault: Path) -> None:
    write(vault, ".trash/Deleted.md")
    write(vault, ".git/objects/readme.md")
    write(vault, "Projects/.hidden/secret.md")
    assert paths(vault) == ALL_NOTES


def test_an_empty_or_missing_vault(tmp_path: Path) -> None:
    assert walk_vault(tmp_path) == ([], [])
    with pytest.raises(InvalidInput, match="does not exist"):
        walk_vault(tmp_path / "missing")


# --- size limit -------------------------------------------------------------------------------------------------


def test_files_over_the_size_limit_are_skipped_with_a_reason_naming_the_key(vault: Path) -> None:
    with (vault / "Big.md").open("wb") as handle:
        handle.truncate(10 * 1024 * 1024 + 1)
    files, skipped = walk_vault(vault)
    assert "Big.md" not in [file.path for file in files]
    assert [item.path for item in skipped] == ["Big.md"]
    assert "larger than the 10 MB limit (ingest.max_file_bytes)" in skipped[0].reason


def test_the_size_limit_is_configurable(vault: Path) -> None:
    files, skipped = walk_vault(vault, max_file_bytes=100)
    assert {file.path for file in files} == {
        "Archive/Old.md",
        "Drawings/Sketch.excalidraw.md",
        "SHOUTING.MD",
        "Templates/Daily.md",
    }
    assert all("100 bytes limit (ingest.max_file_bytes)" in item.reason for item in skipped)
    write(vault, "Big.md", "x" * 2150)
    _, skipped = walk_vault(vault, max_file_bytes=2000)
    assert "larger than the 2000 bytes limit (ingest.max_file_bytes): 2.1 KB;" in skipped[0].reason


# --- symlinks ---------------------------------------------------------------------------------------------------


def test_symlinks_outside_the_vault_are_skipped(vault: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere", "Secret.md", "# Secret\n")
    (vault / "Escape.md").symlink_to(outside)
    (vault / "Elsewhere").symlink_to(outside.parent, target_is_directory=True)
    files, skipped = walk_vault(vault)
    assert [file.path for file in files] == ALL_NOTES
    assert {item.path: item.reason.startswith("symlink to outside the vault") for item in skipped} == {
        "Elsewhere": True,
        "Escape.md": True,
    }


def test_symlinks_inside_the_vault_are_followed_once(vault: Path) -> None:
    (vault / "attachments" / "plain.txt").write_text("# Linked from a .md name\n")
    (vault / "Linked.md").symlink_to(vault / "attachments" / "plain.txt")
    (vault / "Plan alias.md").symlink_to(vault / "Projects" / "Plan.md")
    (vault / "Projects link").symlink_to(vault / "Projects", target_is_directory=True)
    files, skipped = walk_vault(vault)
    assert [file.path for file in files] == sorted([*ALL_NOTES, "Linked.md"])
    reasons = {item.path: item.reason for item in skipped}
    assert reasons["Plan alias.md"] == "symlink to Projects/Plan.md, which is indexed under that path"
    assert reasons["Projects link"] == "symlink to the folder Projects, which is indexed under its own path"


def test_symlink_loops_end(vault: Path) -> None:
    (vault / "Projects" / "Loop").symlink_to(vault, target_is_directory=True)
    (vault / "Projects" / "Research" / "Up").symlink_to(vault / "Projects", target_is_directory=True)
    (vault / "a.md").symlink_to(vault / "b.md")
    (vault / "b.md").symlink_to(vault / "a.md")
    (vault / "Gone.md").symlink_to(vault / "missing.md")
    files, skipped = walk_vault(vault)
    assert [file.path for file in files] == ALL_NOTES
    reasons = {item.path: item.reason for item in skipped}
    assert reasons["Projects/Loop"] == "symlink to the vault folder itself, which is indexed under its own path"
    assert reasons["Projects/Research/Up"].startswith("symlink to the folder Projects")
    assert reasons["a.md"].startswith("broken symlink")
    assert reasons["Gone.md"].startswith("broken symlink")


def test_a_symlink_into_an_excluded_folder_is_not_a_way_around_it(vault: Path) -> None:
    (vault / "Old link.md").symlink_to(vault / "Archive" / "Old.md")
    (vault / "Config").symlink_to(vault / ".obsidian", target_is_directory=True)
    _, skipped = walk_vault(vault, ("Archive/**",))
    assert {item.path for item in skipped} == {"Old link.md", "Config"}
    assert all("not indexed (a hidden folder or ingest.ignore)" in item.reason for item in skipped)


def test_a_vault_root_that_is_itself_a_symlink(vault: Path, tmp_path: Path) -> None:
    (tmp_path / "shortcut").symlink_to(vault, target_is_directory=True)
    assert paths(tmp_path / "shortcut") == ALL_NOTES


# --- reading ----------------------------------------------------------------------------------------------------


def note_file(path: Path, relative: str) -> VaultFile:
    info = path.stat()
    return VaultFile(relative, path.parent, info.st_size, info.st_mtime, on_disk=relative)


def test_read_normalises_line_endings_and_drops_a_bom(tmp_path: Path) -> None:
    path = tmp_path / "n.md"
    path.write_bytes(b"\xef\xbb\xbf# Title\r\nline two\rline three\n")
    assert read_note_text(note_file(path, "n.md")) == "# Title\nline two\nline three\n"


def test_binary_content_is_refused_with_the_offset(vault: Path) -> None:
    (vault / "binary.md").write_bytes(b"# Looks like a note\n\x89PNG\x00\x00IHDR")
    files, _ = walk_vault(vault)
    binary = next(file for file in files if file.path == "binary.md")
    with pytest.raises(InvalidInput, match=r"binary\.md looks binary \(a NUL byte at byte offset 24\)"):
        read_note_text(binary)


def test_non_utf8_is_refused_naming_the_byte_offset_and_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.md"
    path.write_bytes("# Café\n\nCrème\n".encode("latin-1"))
    with pytest.raises(InvalidInput, match=r"not valid UTF-8: byte 0xe9 at byte offset 5 \(line 1\)"):
        read_note_text(note_file(path, "latin.md"))
    path.write_bytes(b"\xef\xbb\xbfok\n\xff")
    with pytest.raises(InvalidInput, match=r"byte offset 6 \(line 2\)"):
        read_note_text(note_file(path, "latin.md"))


def test_utf16_gets_its_own_message(tmp_path: Path) -> None:
    path = tmp_path / "wide.md"
    path.write_bytes("# Wide\n".encode("utf-16"))
    with pytest.raises(InvalidInput, match="UTF-16"):
        read_note_text(note_file(path, "wide.md"))


def test_a_file_gone_since_the_walk_is_not_found(tmp_path: Path) -> None:
    path = write(tmp_path, "gone.md")
    file = note_file(path, "gone.md")
    path.unlink()
    with pytest.raises(NotFound, match=r"gone\.md no longer exists"):
        read_note_text(file)


def test_a_note_swapped_for_a_link_out_of_the_vault_after_the_walk_is_not_read(tmp_path: Path) -> None:
    vault, secret = tmp_path / "vault", tmp_path / "secret.md"
    secret.write_text("# Secret\n\nthe server's own file\n")
    write(vault, "Note.md")
    (note,) = walk_vault(vault)[0]
    (vault / "Note.md").unlink()
    (vault / "Note.md").symlink_to(secret)
    with pytest.raises(OutsideVault, match=r"Note\.md is a symlink to outside the vault"):
        read_note_text(note)
    # And the next walk says the path is no note of the vault now: what was stored under it goes.
    files, skipped = walk_vault(vault)
    assert files == [] and [(item.path, item.forget) for item in skipped] == [("Note.md", True)]


def test_a_note_that_grew_past_the_limit_after_the_walk_is_not_read_whole(tmp_path: Path) -> None:
    path = write(tmp_path, "grows.md", "# Small\n")
    (note,) = walk_vault(tmp_path, max_file_bytes=100)[0]
    path.write_text("# Large\n" + "x" * 1000)
    with pytest.raises(FailedPrecondition, match="larger than 100 bytes"):
        read_note_text(note)


def test_every_fixture_note_reads() -> None:
    files, _ = walk_vault(FIXTURE)
    assert all(read_note_text(file).startswith(("#", "---")) for file in files)


# --- the path as the note's identity ------------------------------------------------------------------------------


def test_a_decomposed_name_is_listed_composed_and_opened_as_spelled_on_disk(tmp_path: Path) -> None:
    on_disk = "Re\u0301sume\u0301s/Cafe\u0301.md"
    write(tmp_path, on_disk, "# Café\n")
    files, skipped = walk_vault(tmp_path)
    assert [(file.path, file.on_disk) for file in files] == [("R\u00e9sum\u00e9s/Caf\u00e9.md", on_disk)]
    assert skipped == []
    assert read_note_text(files[0]) == "# Café\n"


def test_two_spellings_of_one_name_are_one_note_and_one_skipped(tmp_path: Path) -> None:
    write(tmp_path, "Cafe\u0301.md", "# decomposed\n")
    write(tmp_path, "Caf\u00e9.md", "# composed\n")
    files, skipped = walk_vault(tmp_path)
    assert [(file.path, file.on_disk) for file in files] == [("Caf\u00e9.md", "Caf\u00e9.md")]
    assert [item.path for item in skipped] == ["Caf\u00e9.md"]
    assert "same name in another Unicode form" in skipped[0].reason


def test_a_path_too_long_to_index_is_skipped_with_the_limit(tmp_path: Path) -> None:
    deep = "/".join(["d" * 200] * 6) + "/Note.md"
    write(tmp_path, deep)
    write(tmp_path, "Short.md")
    files, skipped = walk_vault(tmp_path)
    assert [file.path for file in files] == ["Short.md"]
    assert [item.path for item in skipped] == [deep]
    assert f"{len(deep)} bytes long (UTF-8), over the 1024-byte limit" in skipped[0].reason


def test_names_that_are_not_utf8_are_skipped_and_reported_spelled_out(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write(vault, "Good.md")
    write_raw(vault, b"Caf\xe9.md")
    write_raw(vault, b"R\xe9sum\xe9s/Plan.md")
    write_raw(tmp_path, b"secr\xe9t.md")
    (vault / "Link.md").symlink_to(Path(os.fsdecode(os.fsencode(tmp_path) + b"/secr\xe9t.md")))
    files, skipped = walk_vault(vault)
    assert [file.path for file in files] == ["Good.md"]
    reasons = {item.path: item.reason for item in skipped}
    assert set(reasons) == {"Caf\\xe9.md", "Link.md", "R\\xe9sum\\xe9s/Plan.md"}
    assert reasons["Caf\\xe9.md"].startswith("the file name is not valid UTF-8")
    assert reasons["R\\xe9sum\\xe9s/Plan.md"].startswith("the folder name R\\xe9sum\\xe9s is not valid UTF-8")
    # Where it points is left out: a server's paths are not an API client's business.
    assert reasons["Link.md"] == "symlink to outside the vault; not followed"
    for item in skipped:  # what PostgreSQL and protobuf are given
        item.path.encode("utf-8")
        item.reason.encode("utf-8")


# --- one folder (personas) ----------------------------------------------------------------------------------------

LIMIT = SizeLimit(100, "for a test", "shorten it")


def test_list_folder_applies_the_walks_rules_in_a_hidden_folder(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write(vault, ".claude/agents/ok.md")
    write(vault, ".claude/agents/big.md", "x" * 101)
    write(vault, ".claude/agents/sub/deeper.md")
    write(vault, ".claude/agents/notes.txt")
    write(vault, "Notes/shared.md")
    outside = write(tmp_path, "passwd", "root:x:0:0\n")
    (vault / ".claude/agents/passwd.md").symlink_to(outside)
    (vault / ".claude/agents/shared.md").symlink_to(vault / "Notes/shared.md")
    files, skipped = list_folder(vault, ".claude/agents", LIMIT)
    assert [file.path for file in files] == [".claude/agents/ok.md", ".claude/agents/shared.md"]
    reasons = {item.path: item.reason for item in skipped}
    assert reasons[".claude/agents/passwd.md"].startswith("symlink to outside the vault")
    assert reasons[".claude/agents/big.md"] == "larger than the 100 bytes limit (for a test): 101 bytes; shorten it"
    assert set(reasons) == {".claude/agents/passwd.md", ".claude/agents/big.md"}


def test_list_folder_does_not_follow_the_folder_itself_out_of_the_vault(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    write(tmp_path, "elsewhere/secret.md")
    (vault / ".claude").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    files, skipped = list_folder(vault, ".claude", LIMIT)
    assert files == []
    assert [item.path for item in skipped] == [".claude"]
    assert skipped[0].reason.startswith("symlink to outside the vault")
    assert list_folder(vault, "missing", LIMIT) == ([], [])
