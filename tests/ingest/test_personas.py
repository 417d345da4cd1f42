"""read_personas: agent definitions read from the vault by the walk's rules, each bad one skipped with a reason."""

from __future__ import annotations

from pathlib import Path

from secondbrain.ingest.personas import read_personas


def write(root: Path, relative: str, data: bytes) -> Path:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def test_a_definition_is_read_from_front_matter_and_body(tmp_path: Path) -> None:
    definition = b"---\nname: Head gardener\nrole: Grows things.\n---\nSpeak kindly.\n"
    write(tmp_path, ".claude/agents/Gardener.md", definition)
    personas, skipped = read_personas(tmp_path)
    assert [(p.id, p.name, p.role, p.definition, p.source) for p in personas] == [
        ("gardener", "Head gardener", "Grows things.", "Speak kindly.", ".claude/agents/Gardener.md")
    ]
    assert skipped == []


def test_bad_definitions_are_skipped_with_reasons_and_never_read_from_outside(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write(vault, ".claude/agents/good.md", b"Be good.\n")
    write(vault, ".claude/agents/nul.md", b"Be\x00 bad.\n")
    write(vault, ".claude/agents/latin.md", "Crème\n".encode("latin-1"))
    write(vault, ".claude/agents/huge.md", b"x" * (256 * 1024 + 1))
    outside = write(tmp_path, "passwd", b"root:x:0:0:root:/root:/bin/bash\n")
    (vault / ".claude/agents/passwd.md").symlink_to(outside)
    personas, skipped = read_personas(vault)
    assert [p.id for p in personas] == ["good"]
    reasons = {item.path.removeprefix(".claude/agents/"): item.reason for item in skipped}
    assert set(reasons) == {"nul.md", "latin.md", "huge.md", "passwd.md"}
    assert "NUL byte at byte offset 2" in reasons["nul.md"]
    assert "not valid UTF-8" in reasons["latin.md"]
    assert "256 KB limit (for an agent definition)" in reasons["huge.md"]
    assert "outside the vault" in reasons["passwd.md"]


def test_a_decomposed_file_name_is_one_persona_named_composed(tmp_path: Path) -> None:
    write(tmp_path, ".claude/agents/Cafe\u0301.md", b"Serve coffee.\n")
    personas, _ = read_personas(tmp_path)
    assert [(p.name, p.source) for p in personas] == [("Caf\u00e9", ".claude/agents/Caf\u00e9.md")]
