"""Where a note's or passage's date was read (ingest writes these with each date; a passage's reader shows them)."""

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
