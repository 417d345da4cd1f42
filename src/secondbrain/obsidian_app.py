"""What a vault's own Obsidian settings (`.obsidian/app.json`) say about how its notes render."""

from __future__ import annotations

import json
from pathlib import Path

from secondbrain.errors import SecondbrainError
from secondbrain.vault_files import read_inside

APP_SETTINGS = ".obsidian/app.json"
# Obsidian's app.json is a few hundred bytes; anything this large is not one.
MAX_BYTES = 256 * 1024


def strict_line_breaks(vault: Path) -> bool:
    """Whether Obsidian joins the single line breaks inside a paragraph in this vault (its "Strict line breaks"
    setting, for notes hard-wrapped in an editor). Off, Obsidian's default, shows each as a line break. False when
    the vault has no Obsidian settings or they cannot be read: they only change how passages look."""
    try:
        settings = json.loads(read_inside(vault, APP_SETTINGS, MAX_BYTES))
    except (SecondbrainError, OSError, ValueError):
        return False
    return isinstance(settings, dict) and settings.get("strictLineBreaks") is True
