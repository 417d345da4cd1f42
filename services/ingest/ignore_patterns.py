"""The vault's ignore patterns (`ingest.ignore` in secondbrain.json), gitignore style, matched against
vault-relative paths."""

from __future__ import annotations

import re
from functools import cache

from secondbrain.errors import ConfigError


@cache
def ignore_pattern(pattern: str) -> IgnorePattern:
    return IgnorePattern(pattern)


class IgnorePattern:
    """An ignore pattern, gitignore style, matched against vault-relative paths.

    `*` and `?` stay within one path segment, `**` crosses segments (`Archive/**`, `**/drafts/*`). A pattern
    without '/' matches a file or folder name at any depth (`*.excalidraw.md`, `Archive`); a pattern with one is
    anchored at the vault root (`Templates/*`). Matching a folder ignores everything inside it; a trailing '/'
    makes a pattern match only folders.
    """

    def __init__(self, pattern: str) -> None:
        pattern = pattern.strip()
        self.folders_only = pattern.endswith("/")
        pattern = pattern.strip("/")
        self.anchored = "/" in pattern
        if pattern.endswith("/**"):
            # "X/**" is everything inside folder X: the same as ignoring the folder, which also skips walking it.
            pattern, self.folders_only = pattern[:-3], True
        try:
            self.regex = re.compile(_glob_to_regex(pattern))
        except re.error as error:
            raise ConfigError(f"ingest.ignore: {pattern!r} is not a valid glob pattern ({error})") from None

    def __call__(self, relative: str, is_dir: bool) -> bool:
        segments = relative.split("/")
        folders = len(segments) if is_dir else len(segments) - 1
        # Anchored patterns try every leading part, so "Archive/2020" ignores each path inside that folder.
        candidates = ["/".join(segments[: index + 1]) for index in range(len(segments))] if self.anchored else segments
        if self.folders_only:
            candidates = candidates[:folders]
        return any(self.regex.fullmatch(candidate) for candidate in candidates)


def _glob_to_regex(pattern: str) -> str:
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
            continue
        if pattern.startswith("**", index):
            parts.append(".*")
            index += 2
            continue
        if char == "*":
            parts.append("[^/]*")
        elif char == "?":
            parts.append("[^/]")
        elif char == "[":
            closing = pattern.find("]", index + 2)
            if closing < 0:
                parts.append(re.escape(char))
            else:
                body = pattern[index + 1 : closing].replace("\\", "\\\\")
                negate = body.startswith("!")
                parts.append(f"[{'^' if negate else ''}{body[1:] if negate else body}]")
                index = closing + 1
                continue
        else:
            parts.append(re.escape(char))
        index += 1
    return "".join(parts)
