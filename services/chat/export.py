"""A conversation written out as a markdown note, to keep in the vault beside the notes it cites.

The note reads as Obsidian shows one: front matter (title, created, exported, the model or models that answered,
the conversation's id), then each question as a heading (a long or many-line one as a quote under a heading) and
each answer under it, with every citation `[n]` turned into an Obsidian link to the passage it cites,
`[[Projects/Kitchen Renovation#Budget|1]]`, so the number still reads as a number and opens the note at its heading.
Each answer ends with its sources: the cited passages as links, with the lines they came from. Nothing is
invented: an answer that did not finish says so, and a number that cites no passage stays as written.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml

from secondbrain.chat import store
from secondbrain.chat.citations import replace_citations

# A question this short, on one line, is the heading itself; a longer one is quoted under a short heading.
HEADING_CHARS = 120
# The longest file name made (before ".md"): within every file system's 255 bytes, and readable in a file list.
MAX_FILE_NAME_CHARS = 100
# What no file name on Windows, macOS or Linux, or no Obsidian link, may hold.
_UNSAFE_IN_NAME = re.compile(r'[\x00-\x1f\x7f\\/:*?"<>|#^\[\]]')
_WINDOWS_RESERVED = re.compile(r"^(con|prn|aux|nul|com[1-9]|lpt[1-9])(\..*)?$", re.IGNORECASE)
# What an Obsidian link's target or heading may not hold: it would end or split the link.
_UNSAFE_IN_LINK = re.compile(r"[\[\]|#^\n]")


@dataclass(frozen=True)
class Exported:
    markdown: str
    file_name: str


@dataclass(frozen=True)
class _Cited:
    """A passage an answer could cite, as a link to its note."""

    note: str
    heading: str
    start_line: int
    end_line: int

    def link(self, alias: str = "") -> str:
        target = self.note.removesuffix(".md")
        if self.heading and not _UNSAFE_IN_LINK.search(self.heading):
            target += f"#{self.heading}"
        return f"[[{target}|{alias}]]" if alias else f"[[{target}]]"

    def lines(self) -> str:
        if not self.start_line:
            return ""
        if self.end_line and self.end_line != self.start_line:
            return f"lines {self.start_line}-{self.end_line}"
        return f"line {self.start_line}"


def export_conversation(
    row: store.ConversationRow, messages: Sequence[store.MessageRow], now: datetime | None = None
) -> Exported:
    now = now or datetime.now(UTC)
    title = row.title or f"Conversation of {row.created_at:%Y-%m-%d}"
    models = list(
        dict.fromkeys(
            f"{m.provider}/{m.model}" if m.provider else m.model for m in messages if m.role == "assistant" and m.model
        )
    )
    front: dict[str, Any] = {
        "title": title,
        "created": _when(row.created_at),
        "exported": _when(now),
        "model": models[0] if len(models) == 1 else models,
        "conversation": str(row.id),
    }
    parts = ["---\n" + yaml.safe_dump(front, allow_unicode=True, sort_keys=False, width=1000) + "---", f"# {title}"]
    for message in messages:
        if message.role == "user":
            parts.append(_question(message.content))
        elif message.role == "assistant":
            parts.append(_answer(message))
    return Exported("\n\n".join(part for part in parts if part) + "\n", file_name(title))


def file_name(title: str) -> str:
    """A file name for a note of this title: what a file system or an Obsidian link cannot hold left out, kept
    short, never hidden (a leading dot) or a name Windows reserves."""
    name = unicodedata.normalize("NFC", title)
    name = _UNSAFE_IN_NAME.sub(" ", name)
    name = " ".join(name.split()).strip(". ")
    if len(name) > MAX_FILE_NAME_CHARS:
        name = name[:MAX_FILE_NAME_CHARS].rsplit(" ", 1)[0].rstrip(". ") or name[:MAX_FILE_NAME_CHARS]
    if not name:
        name = "Conversation"
    if _WINDOWS_RESERVED.match(name):
        name = f"{name} (conversation)"
    return f"{name}.md"


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _question(text: str) -> str:
    text = text.strip()
    if "\n" not in text and len(text) <= HEADING_CHARS:
        return f"## {text}"
    quoted = "\n".join(f"> {line}" if line else ">" for line in text.splitlines())
    return f"## Question\n\n{quoted}"


def _answer(message: store.MessageRow) -> str:
    passages = _passages(message.sources)
    cited: list[int] = []

    def link(numbers: list[int]) -> str:
        known = [n for n in numbers if n in passages]
        if len(known) < len(numbers):  # a number no passage has stays as written
            return f"[{', '.join(map(str, numbers))}]"
        for number in known:
            if number not in cited:
                cited.append(number)
        return ", ".join(passages[n].link(str(n)) for n in known)

    body = replace_citations(message.content.strip(), link) if message.content.strip() else ""
    parts = [body] if body else []
    if message.status != "complete":
        why = f": {message.error}" if message.error else ""
        parts.append(f"*(This answer did not finish{why}.)*")
    if cited:
        sources = []
        for number in cited:
            passage = passages[number]
            lines = passage.lines()
            sources.append(f"{number}. {passage.link()}" + (f" ({lines})" if lines else ""))
        parts.append("Sources:\n\n" + "\n".join(sources))
    return "\n\n".join(parts)


def _passages(sources: dict[str, Any] | None) -> dict[int, _Cited]:
    """The passages of a stored answer's sources (proto JSON of a RetrievalResult), by number."""
    found: dict[int, _Cited] = {}
    for passage in (sources or {}).get("passages", []):
        number, note = passage.get("number"), passage.get("note_path", "")
        if not isinstance(number, int) or not note:
            continue
        headings = passage.get("heading_path") or []
        found[number] = _Cited(
            note,
            headings[-1] if headings else "",
            int(passage.get("start_line", 0) or 0),
            int(passage.get("end_line", 0) or 0),
        )
    return found
