"""Personas from the vault: agent definitions in `.claude/agents/<name>.md`, kept for the chat service.

Front matter gives the name and the role (or description); the body, without front matter, is the definition
appended to the system prompt when the persona is chosen.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from secondbrain.ingest.note import parse_note
from secondbrain.ingest.store import PersonaRow

log = logging.getLogger(__name__)

AGENTS_DIR = Path(".claude") / "agents"
MAX_DEFINITION_BYTES = 256 * 1024


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "persona"


def read_personas(root: Path) -> list[PersonaRow]:
    """Every readable agent definition under `root/.claude/agents`, sorted by id; unreadable ones are logged."""
    directory = root / AGENTS_DIR
    if not directory.is_dir():
        return []
    personas: dict[str, PersonaRow] = {}
    for path in sorted(directory.glob("*.md")):
        if not path.is_file() or path.stat().st_size > MAX_DEFINITION_BYTES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            log.warning("persona not read", extra={"path": str(path), "error": str(error)})
            continue
        note = parse_note(str(AGENTS_DIR / path.name), text)
        front = note.frontmatter
        name = str(front.get("name") or path.stem)
        role = str(front.get("role") or front.get("description") or "")
        persona_id = _slug(path.stem)
        if persona_id == "assistant":  # the built-in default keeps its id
            persona_id = "vault-assistant"
        personas[persona_id] = PersonaRow(
            id=persona_id,
            name=name,
            role=role.strip().splitlines()[0] if role.strip() else "",
            definition=note.body.strip(),
            source=(AGENTS_DIR / path.name).as_posix(),
        )
    return [personas[key] for key in sorted(personas)]
