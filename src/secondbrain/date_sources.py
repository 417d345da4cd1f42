"""Where a note's or passage's date was read (ingest writes these with each date; a passage's reader shows them),
and how dates are written out."""

from __future__ import annotations

from datetime import date

FILE_NAME = "file name"
HEADING = "heading"
# The file's modification time: the last resort, and a weak date (an evergreen note edited yesterday is not news).
MODIFIED = "modification time"
FRONT_MATTER = "front matter"


def said(date: str, source: str) -> str:
    """How a passage's date reads beside it, for a model and a person: "dated 2026-01-20", "dated 2026-01-19 to
    2026-01-25"; "" when undated, or dated only by the file's modification time (a note edited yesterday for a typo
    is not yesterday's decision, and a model told so would take it for the newer one)."""
    if not date or source == MODIFIED:
        return ""
    return f"dated {date.replace('..', ' to ')}"


def span_text(start: date | None, end: date | None) -> str:
    """Days as the API writes them: "2026-01-20", or "2026-01-19..2026-01-25" for a span; "" when not dated."""
    if start is None or end is None:
        return ""
    return start.isoformat() if start == end else f"{start.isoformat()}..{end.isoformat()}"
