"""Canvases (the open JSON Canvas format Obsidian writes): each text card is a passage under its first line, group
labels say what they hold, labelled edges say what connects to what, and file cards are links to the notes and
attachments they show."""

from __future__ import annotations

import json
from typing import Any

from secondbrain.ingest.formats.base import Extracted, Limits, Part, Unreadable

_NAME_CHARACTERS = 60


def extract_canvas(data: bytes, limits: Limits) -> Extracted:
    try:
        canvas = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise Unreadable(f"not a canvas that can be read: its JSON is broken ({str(error)[:120]})") from None
    if not isinstance(canvas, dict):
        raise Unreadable("not a canvas: its JSON is not an object with nodes and edges")
    nodes = [node for node in _list(canvas, "nodes") if isinstance(node, dict)]
    edges = [edge for edge in _list(canvas, "edges") if isinstance(edge, dict)]
    if len(nodes) + len(edges) > limits.max_canvas_nodes:
        raise Unreadable(
            f"the canvas has {len(nodes):,} cards and {len(edges):,} connections, over the "
            f"{limits.max_canvas_nodes:,} limit (ingest.max_canvas_nodes)"
        )
    # Reading order: top to bottom, then left to right, as a person scans a board.
    nodes.sort(key=lambda node: (_number(node, "y"), _number(node, "x")))
    names = {str(node.get("id")): _name(node) for node in nodes}
    extracted = Extracted()
    for node in nodes:
        kind = node.get("type")
        if kind == "text" and isinstance(node.get("text"), str) and node["text"].strip():
            extracted.parts.append(Part(names[str(node.get("id"))], node["text"].strip(), markdown=True))
        elif kind == "file" and isinstance(node.get("file"), str) and node["file"].strip():
            target = node["file"].strip() + (node["subpath"] if isinstance(node.get("subpath"), str) else "")
            if target not in extracted.links:
                extracted.links.append(target)
        elif kind == "link" and isinstance(node.get("url"), str):
            extracted.parts.append(Part(f"Link: {names[str(node.get('id'))]}", node["url"]))
        elif kind == "group" and isinstance(node.get("label"), str) and node["label"].strip():
            inside = [names[str(other.get("id"))] for other in nodes if other is not node and _within(other, node)]
            holds = f"\n\nIn this group: {'; '.join(inside)}" if inside else ""
            extracted.parts.append(Part(f"Group: {node['label'].strip()}", f"{node['label'].strip()}{holds}"))
    connections = [
        f"{names.get(str(edge.get('fromNode')), '?')} → {names.get(str(edge.get('toNode')), '?')}: {label.strip()}"
        for edge in edges
        if isinstance(label := edge.get("label"), str) and label.strip()
    ]
    if connections:
        extracted.parts.append(Part("Connections", "\n".join(f"- {line}" for line in connections), markdown=True))
    if not extracted.parts and not extracted.links:
        extracted.unread.append("the canvas has no text, labels or files to index")
    return extracted


def _list(canvas: dict[str, Any], key: str) -> list[Any]:
    value = canvas.get(key, [])
    return value if isinstance(value, list) else []


def _number(node: dict[str, Any], key: str) -> float:
    value = node.get(key, 0)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _within(node: dict[str, Any], group: dict[str, Any]) -> bool:
    x, y = _number(node, "x"), _number(node, "y")
    left, top = _number(group, "x"), _number(group, "y")
    return left <= x <= left + _number(group, "width") and top <= y <= top + _number(group, "height")


def _name(node: dict[str, Any]) -> str:
    """What a person would call a card: its first line of text, its file's name, its URL or its group's label."""
    for key in ("text", "label", "file", "url"):
        value = node.get(key)
        if isinstance(value, str) and value.strip():
            first = value.strip().split("\n", 1)[0].lstrip("#").strip() or value.strip()
            if key == "file":
                first = first.rsplit("/", 1)[-1]
            return first if len(first) <= _NAME_CHARACTERS else first[: _NAME_CHARACTERS - 1] + "…"
    return "a card"
