"""Small to big: each winning chunk is shown with its neighbours, contiguous spans merge, and the whole stays
within a token budget, so the model reads context a tight chunk loses without reading whole notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from secondbrain.block_windows import join_windows
from secondbrain.date_sources import span_text
from secondbrain.retrieve.chunk_text import body_of
from secondbrain.retrieve.store import ChunkRow


@dataclass
class Span:
    """A run of consecutive chunks of one note around one or more winners."""

    file_id: int
    first: int
    last: int
    best_rank: int  # the rank of its best winner, 0-based
    winners: list[int] = field(default_factory=list)  # chunk indexes of the winners inside, best first


# The chunker's overlap is whole sentences or words, tens of tokens; a shorter shared run is a coincidence.
MIN_OVERLAP_CHARS = 20


def without_overlap(previous: str, following: str) -> str:
    """`following` without the longest start of it (at least MIN_OVERLAP_CHARS) that `previous` ends with: the
    chunker's overlap.

    Only the places where `following`'s first MIN_OVERLAP_CHARS characters occur in `previous` can start an overlap,
    so each is checked once, from the earliest (the longest overlap): linear in practice, where trying every length
    was quadratic and, measured, most of a passage's assembly time.
    """
    head = following[:MIN_OVERLAP_CHARS]
    if len(head) < MIN_OVERLAP_CHARS:
        return following
    position = previous.find(head, max(0, len(previous) - len(following)))
    while position != -1:
        if following.startswith(previous[position:]):
            return following[len(previous) - position :].lstrip()
        position = previous.find(head, position + 1)
    return following


def plan_spans(
    winners: Sequence[tuple[int, int]], available: dict[tuple[int, int], ChunkRow], radius: int, per_note: int
) -> list[Span]:
    """Spans around `winners` ((file_id, chunk_index), best first): neighbours within `radius` that exist, merged when
    they touch, at most `per_note` chunks per note (the best winners' spans are kept first)."""
    spans: list[Span] = []
    used: dict[int, int] = {}
    for rank, (file_id, index) in enumerate(winners):
        if (file_id, index) not in available:
            continue
        first, last = index, index
        while first - 1 >= index - radius and (file_id, first - 1) in available:
            first -= 1
        while last + 1 <= index + radius and (file_id, last + 1) in available:
            last += 1
        merged = next((s for s in spans if s.file_id == file_id and s.first <= last + 1 and first <= s.last + 1), None)
        if merged is not None:
            grown_first, grown_last = min(merged.first, first), max(merged.last, last)
            extra = (grown_last - grown_first) - (merged.last - merged.first)
            if used[file_id] + extra > per_note:
                grown_first, grown_last = min(merged.first, index), max(merged.last, index)
                extra = (grown_last - grown_first) - (merged.last - merged.first)
                if used[file_id] + extra > per_note:
                    continue
            merged.first, merged.last = grown_first, grown_last
            merged.winners.append(index)
            used[file_id] += extra
            continue
        budget = per_note - used.get(file_id, 0)
        if budget <= 0:
            continue
        # Shrink the neighbourhood to the note's remaining allowance, keeping the winner.
        while last - first + 1 > budget:
            if last > index:
                last -= 1
            else:
                first += 1
        spans.append(Span(file_id, first, last, rank, [index]))
        used[file_id] = used.get(file_id, 0) + (last - first + 1)
    return spans


@dataclass(frozen=True)
class Excerpt:
    """A passage's text and where it stands in its note; the passage a client reads carries it too."""

    path: str
    title: str
    heading_path: list[str]
    start_line: int
    end_line: int
    text: str
    chunk_indexes: list[int]
    # The days its chunks are from ("2026-01-20", "2026-01-19..2026-01-25"), and where that was read; "" undated.
    date: str = field(default="", kw_only=True)
    date_source: str = field(default="", kw_only=True)
    # The pages of an attachment it comes from (first, last); None for a note's.
    page_start: int | None = field(default=None, kw_only=True)
    page_end: int | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class PassageText(Excerpt):
    """An assembled span: its excerpt, the note it is from, its size, and the rank of its best winner."""

    file_id: int
    tokens: int
    best_rank: int


def span_heading(first: Sequence[str], last: Sequence[str]) -> list[str]:
    """A span's label: the heading its first line sits under, and when it runs into another section, that one too
    (`Kitchen > Goal … Open questions`), so the label never names a section the text does not start in."""
    if list(first) == list(last):
        return list(first)
    shared = 0
    while shared < min(len(first), len(last)) and first[shared] == last[shared]:
        shared += 1
    if shared == len(last):  # it ends back under a heading it started below: the first one covers it
        return list(first)
    start = first[shared] if shared < len(first) else ""
    return [*first[:shared], f"{start} … {last[shared]}".strip()]


def assemble(span: Span, available: dict[tuple[int, int], ChunkRow]) -> PassageText:
    chunks = [available[(span.file_id, index)] for index in range(span.first, span.last + 1)]
    winner = available[(span.file_id, span.winners[0])]
    parts: list[str] = []
    previous_text = ""
    previous_path: list[str] | None = None
    for chunk in chunks:
        text = body_of(chunk.content)
        joined = join_windows(parts[-1], text) if parts else None
        if joined is not None:  # the next window of the code block or table the last part ends with
            parts[-1] = joined
            previous_text, previous_path = text, chunk.heading_path
            continue
        if previous_text:
            text = without_overlap(previous_text, text)
        if previous_path is not None and chunk.heading_path != previous_path and chunk.heading_path:
            text = f"{'#' * (len(chunk.heading_path) + 1)} {chunk.heading_path[-1]}\n\n{text}"
        parts.append(text)
        previous_text, previous_path = body_of(chunk.content), chunk.heading_path
    return PassageText(
        file_id=span.file_id,
        path=winner.path,
        title=winner.title,
        heading_path=span_heading(chunks[0].heading_path, chunks[-1].heading_path),
        start_line=min(c.start_line for c in chunks),
        end_line=max(c.end_line for c in chunks),
        text="\n\n".join(part for part in parts if part),
        chunk_indexes=[c.chunk_index for c in chunks],
        tokens=sum(c.token_count for c in chunks),
        best_rank=span.best_rank,
        date=_span_date(chunks),
        date_source=winner.date_source,
        page_start=min((c.page_start for c in chunks if c.page_start is not None), default=None),
        page_end=max((c.page_end for c in chunks if c.page_end is not None), default=None),
    )


def _span_date(chunks: Sequence[ChunkRow]) -> str:
    """The days `chunks` are from together: one day, or the first to the last; "" when one is not dated."""
    if any(c.date_start is None or c.date_end is None for c in chunks):
        return ""
    return span_text(min(c.date_start for c in chunks if c.date_start), max(c.date_end for c in chunks if c.date_end))


def within_budget(passages: Sequence[PassageText], budget: int, limit: int) -> list[PassageText]:
    """Passages in rank order until `limit` of them or the token `budget` is spent; one that does not fit is skipped
    so a smaller one after it may still fit. The best passage is always kept."""
    kept: list[PassageText] = []
    spent = 0
    for passage in sorted(passages, key=lambda p: p.best_rank):
        if len(kept) == limit:
            break
        if kept and spent + passage.tokens > budget:
            continue
        kept.append(passage)
        spent += passage.tokens
    return kept
