"""Personas from the vault: agent definitions in `.claude/agents/<name>.md`, kept for the chat service.

Front matter gives the name and the role (or description); the body, without front matter, is the definition
appended to the system prompt when the persona is chosen. The files are found and read by the vault walk's rules, as
notes are: a definition goes to a model, so a symlink out of the vault must not put a file of the server there.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from secondbrain.errors import FailedPrecondition, InvalidInput, NotFound
from secondbrain.ingest.note import parse_note
from secondbrain.ingest.store import PersonaRow
from secondbrain.ingest.vault_walk import SizeLimit, Skipped, list_folder, read_note_text

AGENTS_DIR = ".claude/agents"
# Appended to every prompt of a chat with the persona, so far smaller than a note may be.
DEFINITION_LIMIT = SizeLimit(256 * 1024, "for an agent definition", "shorten it")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "persona"


def read_personas(root: Path) -> tuple[list[PersonaRow], list[Skipped]]:
    """Every readable agent definition under `root/.claude/agents`, sorted by id, and the files not read, with why."""
    files, skipped = list_folder(root, AGENTS_DIR, DEFINITION_LIMIT)
    personas: dict[str, PersonaRow] = {}
    for file in files:
        try:
            text = read_note_text(file)
        except (InvalidInput, NotFound, FailedPrecondition) as error:
            skipped.append(Skipped(file.path, str(error)))
            continue
        note = parse_note(file.path, text)
        front = note.frontmatter
        stem = PurePosixPath(file.path).stem
        name = str(front.get("name") or stem)
        role = str(front.get("role") or front.get("description") or "")
        persona_id = _slug(stem)
        if persona_id == "assistant":  # the built-in default keeps its id
            persona_id = "vault-assistant"
        personas[persona_id] = PersonaRow(
            id=persona_id,
            name=name,
            role=role.strip().splitlines()[0] if role.strip() else "",
            definition=note.body.strip(),
            source=file.path,
        )
    return [personas[key] for key in sorted(personas)], sorted(skipped, key=lambda item: item.path)
