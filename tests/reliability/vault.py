"""A generated vault whose every sentence carries a version word, so a test can tell which version a chunk is."""

from __future__ import annotations

import random
from pathlib import Path

TOPICS = ["garden", "compost", "tomato", "lisbon", "sourdough", "bicycle", "telescope", "harbour", "violin", "glacier"]
WORDS = ["water", "morning", "season", "careful", "measure", "notes", "plan", "river", "light", "stone", "bread"]


def note_text(index: int, version: str) -> str:
    rng = random.Random(index)
    topic = TOPICS[index % len(TOPICS)]
    sections = []
    for section in range(3):
        sentences = [
            f"The {topic} {' '.join(rng.choices(WORDS, k=8))} {version} item {index} part {section}." for _ in range(7)
        ]
        sections.append(f"## Part {section}\n\n" + " ".join(sentences))
    return f"# {topic.title()} {index}\n\n" + "\n\n".join(sections) + "\n"


def note_path(index: int) -> str:
    return f"Topic {index % 7}/Note {index:04d}.md"


def write_vault(vault: Path, count: int, version: str, start: int = 0) -> None:
    for index in range(start, start + count):
        target = vault / note_path(index)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(note_text(index, version), encoding="utf-8")
