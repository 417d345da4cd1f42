"""Chunking a note: heading-aware, block-packed, with overlap, sized for the embedder's window.

The note's blocks and the headings over them are `note_blocks`'; this module packs them. Why this shape: a chunk is
embedded and shown to the model on its own, so it carries its place in the note
(`Title > Heading > Subheading`) in its `content`, never mixes two sections, and never cuts a code fence or a table
in half. Blocks (paragraphs, list items, quotes, fences, tables) are packed greedily; a block too big for a chunk is
split at sentences, then lines, then words, then (only for a "word" longer than a chunk) characters. A fence or
table too big for a chunk is cut into windows of whole lines or rows instead, each a block of its own: the fence's
opening and closing lines, or the table's header and delimiter rows, are repeated in every window, so the embedder
reads all of it (not only its head) and every window reads, and renders, as the code or table it is.

Token counting is the cost that matters (the embedder's tokenizer takes tens of microseconds per call), so each
block or piece is counted once, chunk sizes are estimated by adding those counts, and the finished `content` is
counted once to confirm; only when that confirmation fails is the chunk re-packed smaller.

Chunk text is always cut from the note's own body: whole lines, or slices of them at sentence or word
boundaries (a window's repeated header is the note's own lines too). Whitespace between blocks is kept as written,
except that runs of blank lines become one.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from secondbrain import block_windows
from secondbrain.errors import ResourceExhausted
from secondbrain.ingest.note import ParsedNote
from secondbrain.ingest.note_blocks import ATOMIC_KINDS, LIST_KINDS, Block, NoteBlocks, Section

# The version of what ingest makes of a note's text, its chunks and what is stored with them: raise it whenever the
# same note would be stored differently, and the next sync reads every note again (keeping the vectors of unchanged
# chunks). 2: long fences and tables in windows. 3: dates of notes and passages (secondbrain.ingest.note_dates).
# 4: a fence's or table's line too long for a chunk is cut, at words, into windows of its own; a title is at most
# 200 characters (note.MAX_TITLE_CHARS). 5: dates written in more ways (day first, without the year under a year's
# heading, a month heading, a note's first line). 6: a PDF's table rows with their cells apart, and its pages'
# sections from their headings where it has no outline (formats.pdf_layout). 7: no tag right after a code span or a
# link, a code span inside a link kept as its text (note), a PDF's line after a blockquote or list marker escaped.
CHUNKING = 7

# Reference point from the design: a 512-token encoder gets ~400-token chunks with 60 tokens of overlap.
_REFERENCE_WINDOW = 512
_REFERENCE_MAX_TOKENS = 400
_REFERENCE_OVERLAP_TOKENS = 60
# Encoders add [CLS]/[SEP]-style tokens; a chunk must leave room for them.
_SPECIAL_TOKENS_ROOM = 16
# Below this there is no room for a heading prefix and text together.
MIN_MAX_TOKENS = 16

# The end of a sentence: terminal punctuation, optional closing quotes or brackets or emphasis, then whitespace.
# CJK full stops need no space after them. A match starts only where a run of punctuation does: tried inside the run
# too, a note of 20 KB of "?" took 5 s to chunk (quadratic), and the run's start finds the same matches.
_CLOSERS = "\"'\u201d\u2019\u00bb)\\]*_"
_CJK_CLOSERS = "\"'\u201d\u2019\u300d\u300f)\\]"
_SENTENCE_END_RE = re.compile(
    f"(?<![.!?\u2026])([.!?\u2026]+[{_CLOSERS}]*)\\s+|([\u3002\uff01\uff1f]+[{_CJK_CLOSERS}]*)\\s*"
)
_WORD_RE = re.compile(r"\S+")
_LINE_RE = re.compile(r"[^\n]+")
_ELLIPSIS = "…"
# Real tokenizers average far fewer characters than this per token, so a longer span is split without being
# counted: tokenizing megabytes only to learn they are too big is the slow path. (A tokenizer that did pack more
# would only get smaller chunks than it could hold, never bigger ones.)
_MAX_CHARS_PER_TOKEN = 64
# A first guess of a span's size before it is counted (English averages about four characters a token).
_GUESS_CHARS_PER_TOKEN = 4
# Sentences shorter than this are counted together ("a. b. c." is one count, not three).
_MIN_SENTENCE_RUN_CHARS = 48


@dataclass(frozen=True)
class ChunkBudget:
    """Token budget for one chunk's whole `content`, and how much of the previous chunk each chunk repeats."""

    max_tokens: int
    overlap_tokens: int

    def __post_init__(self) -> None:
        if self.max_tokens < MIN_MAX_TOKENS:
            raise ValueError(f"max_tokens must be at least {MIN_MAX_TOKENS}, got {self.max_tokens}")
        if not 0 <= self.overlap_tokens <= self.max_tokens // 2:
            raise ValueError(f"overlap_tokens must be between 0 and max_tokens // 2, got {self.overlap_tokens}")

    @classmethod
    def for_window(cls, window: int) -> ChunkBudget:
        """About 400 tokens with 60 overlap for a 512-token encoder, proportionally smaller for a smaller window
        (256 -> 200/30), never more than window - 16 (room for the encoder's special tokens)."""
        max_tokens = min(
            _REFERENCE_MAX_TOKENS, window * _REFERENCE_MAX_TOKENS // _REFERENCE_WINDOW, window - _SPECIAL_TOKENS_ROOM
        )
        if max_tokens < MIN_MAX_TOKENS:
            raise ValueError(f"an encoder window of {window} tokens is too small to chunk notes for")
        return cls(max_tokens, max_tokens * _REFERENCE_OVERLAP_TOKENS // _REFERENCE_MAX_TOKENS)


@dataclass(frozen=True)
class Chunk:
    """One passage to embed and store; `content` is what the embedder and the model see."""

    index: int
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    content: str
    token_count: int
    oversized: bool
    # Part of a fence or table too long for one chunk: its text repeats the block's header (and a fence's closing
    # line), so it is the note's lines start_line..end_line plus those.
    window: bool = False


class TooManyChunks(ResourceExhausted):
    """The note makes more chunks than it may (`ingest.max_chunks_per_note`)."""


def chunk_note(
    note: ParsedNote, budget: ChunkBudget, count_tokens: Callable[[str], int], max_chunks: int | None = None
) -> list[Chunk]:
    """Split a parsed note into chunks of at most `budget.max_tokens` (a lone fence or table may exceed it). With
    `max_chunks`, a note that makes more raises TooManyChunks as soon as it does, before the rest is chunked."""
    return _Chunker(note, budget, count_tokens).run(max_chunks)


@dataclass(frozen=True)
class _Unit:
    """The smallest piece the packer moves: a body character span with its counted tokens.

    `atomic` marks a whole fence or table (never split); `has_code` marks a unit that is or holds one, which is
    never repeated as overlap.
    """

    start: int
    end: int
    tokens: int
    atomic: bool = False
    has_code: bool = False


class _Chunker:
    """One note's chunking run; holds the body, its line offsets and a cache of counted spans."""

    def __init__(self, note: ParsedNote, budget: ChunkBudget, count_tokens: Callable[[str], int]) -> None:
        self.note = note
        self.budget = budget
        self.count = count_tokens
        self.blocks = NoteBlocks(note.body, note.title)
        self.body = note.body
        self.lines = self.blocks.lines
        self.line_starts = _line_starts(self.lines)
        self.span_tokens: dict[tuple[int, int], int] = {}

    def run(self, max_chunks: int | None = None) -> list[Chunk]:
        chunks: list[Chunk] = []
        for section in self.blocks.sections():
            chunks.extend(self.chunk_section(section, first_index=len(chunks)))
            if max_chunks is not None and len(chunks) > max_chunks:
                raise TooManyChunks(
                    f"the note makes more than {max_chunks:,} chunks, the limit (ingest.max_chunks_per_note): split "
                    "it into smaller notes, or raise the limit in the vault's secondbrain.json"
                )
        return chunks

    # --- units -----------------------------------------------------------------------------------------------

    def tokens_of(self, start: int, end: int) -> int:
        """Tokens in body[start:end], counted once: a block and its only child often share a span."""
        key = (start, end)
        if key not in self.span_tokens:
            self.span_tokens[key] = self.count(self.body[start:end])
        return self.span_tokens[key]

    def line_span(self, start: int, end: int) -> tuple[int, int] | None:
        """Character span of body lines [start, end) without leading blank lines or trailing whitespace."""
        end = min(end, len(self.lines))
        while start < end and not self.lines[start].strip():
            start += 1
        if start >= end:
            return None
        first = self.line_starts[start]
        last = self.line_starts[end - 1] + len(self.lines[end - 1])
        while last > first and self.body[last - 1].isspace():
            last -= 1
        return first, last

    def units(self, node: Block, avail: int) -> list[_Unit]:
        """Pieces of one block that each fit `avail`: the whole block if it fits, else its parts.

        Only leaves are counted; a container's size is the sum of its parts, so a list nested twenty deep is
        tokenized once, not once per level. The finished chunk is counted anyway, which catches a short sum.
        """
        span = self.line_span(node.start, node.end)
        if span is None:
            return []
        start, end = span
        if node.kind in ATOMIC_KINDS:
            return [_Unit(start, end, self.tokens_of(start, end), atomic=True, has_code=True)]
        if node.children:
            parts = self.blocks.fill_gaps(node.children, node.start, node.end)
            units = [unit for part in parts for unit in self.units(part, avail)]
            tokens = self.estimate(units)
            if len(units) > 1 and tokens <= avail:
                return [_Unit(start, end, tokens, has_code=node.contains_code())]
            return units
        if end - start <= avail * _MAX_CHARS_PER_TOKEN:
            tokens = self.tokens_of(start, end)
            if tokens <= avail:
                return [_Unit(start, end, tokens)]
        return self.split_span(start, end, avail)

    def section_units(self, blocks: list[Block], avail: int) -> list[_Unit]:
        """A top-level list contributes its items as separate blocks, so a long list packs and splits by item."""
        units: list[_Unit] = []
        for block in blocks:
            if block.kind in LIST_KINDS and block.children:
                for item in self.blocks.fill_gaps(block.children, block.start, block.end):
                    units.extend(self.units(item, avail))
            else:
                units.extend(self.units(block, avail))
        return units

    def split_span(self, start: int, end: int, limit: int) -> list[_Unit]:
        """Split text at sentence ends; a sentence over `limit` is cut at lines, then words, then characters."""
        units: list[_Unit] = []
        for piece_start, piece_end in self.sentence_runs(start, end):
            if piece_end - piece_start <= limit * _MAX_CHARS_PER_TOKEN:
                tokens = self.tokens_of(piece_start, piece_end)
                if tokens <= limit:
                    units.append(_Unit(piece_start, piece_end, tokens))
                    continue
            else:
                tokens = (piece_end - piece_start) // _GUESS_CHARS_PER_TOKEN + 1
            units.extend(self.group(piece_start, piece_end, tokens, limit, level=0))
        return units

    def sentence_runs(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """Sentences, with short neighbours merged so each run has at least a few words to count."""
        run_start: int | None = None
        run_end = start
        for sentence_start, sentence_end in self.sentences(start, end):
            run_start = sentence_start if run_start is None else run_start
            run_end = sentence_end
            if run_end - run_start >= _MIN_SENTENCE_RUN_CHARS:
                yield run_start, run_end
                run_start = None
        if run_start is not None:
            yield run_start, run_end

    def sentences(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """Spans of the sentences in [start, end), without the whitespace between them."""
        cursor = start
        for match in _SENTENCE_END_RE.finditer(self.body, start, end):
            sentence_end = match.end(1) if match.group(1) is not None else match.end(2)
            if sentence_end > cursor:
                yield cursor, sentence_end
            cursor = match.end()
        if cursor < end:
            yield cursor, end

    def group(self, start: int, end: int, tokens: int, limit: int, level: int) -> list[_Unit]:
        """Greedy runs of lines (level 0), words (1) or characters (2) that fit `limit`.

        Run lengths are guessed from the tokens per atom seen so far and confirmed by one count, so a huge
        sentence costs a few tokenizer calls per piece rather than one per word.
        """
        starts, ends = self.atoms(start, end, level)
        units: list[_Unit] = []
        per_atom = max(tokens / max(len(starts), 1), 1e-3)
        index = 0
        while index < len(starts):
            size, piece_tokens = self.fit_run(starts, ends, index, max(1, int(limit / per_atom)), limit)
            piece_start, piece_end = starts[index], ends[index + size - 1]
            if (piece_tokens is None or piece_tokens > limit) and level < 2:
                guess = piece_tokens or (piece_end - piece_start) // _GUESS_CHARS_PER_TOKEN + 1
                units.extend(self.group(piece_start, piece_end, guess, limit, level + 1))
            else:
                units.append(_Unit(piece_start, piece_end, piece_tokens or self.tokens_of(piece_start, piece_end)))
            if piece_tokens is not None:
                per_atom = max(piece_tokens / size, 1e-3)
            index += size
        return units

    def fit_run(
        self, starts: Sequence[int], ends: Sequence[int], index: int, size: int, limit: int
    ) -> tuple[int, int | None]:
        """How many atoms from `index` fit `limit`, and their tokens; None when one atom is too long to count."""
        size = min(size, len(starts) - index)
        while True:
            piece_start, piece_end = starts[index], ends[index + size - 1]
            if piece_end - piece_start > limit * _MAX_CHARS_PER_TOKEN:
                if size == 1:
                    return 1, None
                size = max(1, size // 2)
                continue
            piece_tokens = self.tokens_of(piece_start, piece_end)
            if piece_tokens <= limit or size == 1:
                return size, piece_tokens
            size = max(1, min(size - 1, int(size * limit / piece_tokens * 0.9)))

    def atoms(self, start: int, end: int, level: int) -> tuple[Sequence[int], Sequence[int]]:
        """Start and end offsets of the lines, words or characters in [start, end); ranges for characters, so a
        megabyte-long word costs no list."""
        if level == 2:
            return range(start, end), range(start + 1, end + 1)
        pattern = _LINE_RE if level == 0 else _WORD_RE
        spans = [(match.start(), len(match.group().rstrip())) for match in pattern.finditer(self.body, start, end)]
        spans = [(first, length) for first, length in spans if length]
        return [first for first, _ in spans], [first + length for first, length in spans]

    # --- packing ---------------------------------------------------------------------------------------------

    def chunk_section(self, section: Section, first_index: int) -> list[Chunk]:
        """Pack one section's units greedily; a fence or table too big for any chunk gets one of its own."""
        if not section.blocks:
            return []
        # The chunk records its heading path (which citations show) whatever the budget, a pathological heading cut
        # to a line's width; the prefix before the text may show it shorter still, or not at all, to leave the text
        # room (found by hypothesis: at 16 tokens, four short headings were dropped from the record too).
        path = tuple(_shorten(part, RECORDED_HEADING_CHARS) for part in section.path)
        title, shown, prefix_tokens = self.prefix(path)
        prefix = " > ".join((title, *shown))
        avail = self.budget.max_tokens - prefix_tokens
        pending = deque(self.section_units(section.blocks, avail))
        chunks: list[Chunk] = []
        carry: list[_Unit] = []
        while pending:
            head = pending[0]
            if head.atomic and head.tokens > avail:
                pending.popleft()
                chunks.extend(self.window_chunks(head, first_index + len(chunks), path, prefix, avail))
                carry = []
                continue
            carry = self.fit_carry(carry, head, avail)
            fresh = self.take(pending, carry, avail)
            chunk, used = self.confirm(first_index + len(chunks), path, prefix, carry, fresh, pending)
            chunks.append(chunk)
            carry = [] if chunk.oversized else self.overlap(used)
        return chunks

    def prefix(self, path: tuple[str, ...]) -> tuple[str, tuple[str, ...], int]:
        """The title and heading path to put before the text, and what they cost with the blank line after.

        A prefix may use at most half the budget; a pathologically long title or heading is shortened
        (ending in '…'), so the text always has room.
        """
        title = self.note.title
        limit = self.budget.max_tokens // 2
        tokens = self.count(" > ".join((title, *path))) + 1
        for width in (80, 40, 20, 10, 5, 2, 1):
            if tokens <= limit:
                break
            title, path = _shorten(self.note.title, width), tuple(_shorten(part, width) for part in path)
            tokens = self.count(" > ".join((title, *path))) + 1
        if tokens > limit:
            title, path = _shorten(self.note.title, 1), ()
            tokens = self.count(title) + 1
        return title, path, tokens

    def fit_carry(self, carry: list[_Unit], head: _Unit, avail: int) -> list[_Unit]:
        """Drop overlap from the front until the next new unit fits after it."""
        carry = list(carry)
        while carry and self.estimate([*carry, head]) > avail:
            carry.pop(0)
        return carry

    def take(self, pending: deque[_Unit], carry: list[_Unit], avail: int) -> list[_Unit]:
        """Pop the new units that fit after `carry`; at least one, so every chunk moves forward."""
        fresh: list[_Unit] = []
        total = self.estimate(carry)
        previous = carry[-1] if carry else None
        while pending:
            unit = pending[0]
            if unit.atomic and unit.tokens > avail:
                break
            cost = unit.tokens + (self.join_cost(previous, unit) if previous else 0)
            if fresh and total + cost > avail:
                break
            fresh.append(pending.popleft())
            total += cost
            previous = unit
        return fresh

    def confirm(
        self,
        index: int,
        path: tuple[str, ...],
        prefix: str,
        carry: list[_Unit],
        fresh: list[_Unit],
        pending: deque[_Unit],
    ) -> tuple[Chunk, list[_Unit]]:
        """Count the finished content once; when the estimate was short, give units back and try smaller.

        Returns the chunk and the units it finally holds, which the next chunk's overlap is taken from.
        """
        while True:
            chunk = self.make_chunk(index, path, prefix, [*carry, *fresh])
            if not chunk.oversized:
                return chunk, [*carry, *fresh]
            if len(fresh) > 1:
                pending.appendleft(fresh.pop())
            elif carry:
                carry = []
            elif fresh[0].atomic:
                return chunk, [*carry, *fresh]
            else:
                over = chunk.token_count - self.budget.max_tokens
                pieces = self.split_span(fresh[0].start, fresh[0].end, fresh[0].tokens - over - 1)
                if len(pieces) <= 1:
                    # One character that alone outweighs the budget: nothing smaller exists to send.
                    return chunk, [*carry, *fresh]
                fresh = [pieces[0]]
                pending.extendleft(reversed(pieces[1:]))

    def make_chunk(self, index: int, path: tuple[str, ...], prefix: str, units: list[_Unit]) -> Chunk:
        text = self.join(units)
        content = f"{prefix}\n\n{text}"
        token_count = self.count(content)
        offset = self.note.body_start_line - 1
        return Chunk(
            index=index,
            heading_path=path,
            start_line=offset + self.line_of(units[0].start),
            end_line=offset + self.line_of(units[-1].end - 1),
            text=text,
            content=content,
            token_count=token_count,
            oversized=token_count > self.budget.max_tokens,
        )

    # --- windows of a long fence or table ----------------------------------------------------------------------

    def window_chunks(
        self, block: _Unit, first_index: int, path: tuple[str, ...], prefix: str, avail: int
    ) -> list[Chunk]:
        """A fence or table over `avail` as chunks of whole lines, each with the block's header (a fence's opening
        line, a table's header and delimiter rows) and a fence's closing line around as many of the lines between as
        fit. A window the estimate got wrong is halved until it fits; a single line too long for any window is cut, at
        words (else characters), into windows of its own: a megabyte-long line was once a chunk of a megabyte, which
        every later reader (the search's highlighting, the prompt, the quoting provider) then had to read whole."""
        first, last = self.line_of(block.start) - 1, self.line_of(block.end - 1) - 1
        header_count, footer_count = block_windows.frame(self.lines[first : last + 1])
        header = list(range(first, first + header_count))
        footer = list(range(last + 1 - footer_count, last + 1))
        inner = list(range(first + header_count, last + 1 - footer_count))
        if not inner:
            return [self.make_chunk(first_index, path, prefix, [block])]
        # What every window repeats, as text: a table's delimiter row in its shortest form.
        head = [block_windows.delimiter_row(self.lines[line]) for line in header]
        tail = [self.lines[line] for line in footer]
        frame_tokens = self.count("\n".join([*head, *tail])) + 1
        pending: deque[list[int]] = deque()
        current: list[int] = []
        size = frame_tokens
        for line in inner:
            cost = self.line_tokens(line) + 1
            if current and size + cost > avail:
                pending.append(current)
                current, size = [], frame_tokens
            current.append(line)
            size += cost
        pending.append(current)
        chunks: list[Chunk] = []
        while pending:
            window = pending.popleft()
            # The first window starts at the block's first line, the last ends at its last; the rest span what they add.
            start = first if window[0] == inner[0] else window[0]
            end = last if window[-1] == inner[-1] else window[-1]
            text = "\n".join([*head, *(self.lines[line] for line in window), *tail])
            chunk = self.make_window(first_index + len(chunks), path, prefix, text, start, end)
            if chunk.oversized and len(window) > 1:
                half = len(window) // 2
                pending.extendleft([window[half:], window[:half]])
                continue
            if chunk.oversized:
                for piece in self.line_pieces(window[0], max(avail - frame_tokens, 1)):
                    text = "\n".join([*head, piece, *tail])
                    chunks.append(self.make_window(first_index + len(chunks), path, prefix, text, start, end))
                continue
            chunks.append(chunk)
        return chunks

    def line_pieces(self, line: int, limit: int) -> list[str]:
        """Body line `line` (by index) cut into pieces of at most `limit` tokens, at words, else characters."""
        start = self.line_starts[line]
        end = start + len(self.lines[line])
        guess = (end - start) // _GUESS_CHARS_PER_TOKEN + 1
        return [self.body[unit.start : unit.end] for unit in self.group(start, end, guess, limit, level=1)]

    def line_tokens(self, line: int) -> int:
        """Tokens of one body line (by index), counted once."""
        start = self.line_starts[line]
        return self.tokens_of(start, start + len(self.lines[line])) if self.lines[line].strip() else 0

    def make_window(self, index: int, path: tuple[str, ...], prefix: str, text: str, start: int, end: int) -> Chunk:
        """One window's chunk: `text`, covering body lines `start`..`end` (0-based)."""
        content = f"{prefix}\n\n{text}"
        token_count = self.count(content)
        offset = self.note.body_start_line
        return Chunk(
            index=index,
            heading_path=path,
            start_line=offset + start,
            end_line=offset + end,
            text=text,
            content=content,
            token_count=token_count,
            oversized=token_count > self.budget.max_tokens,
            window=True,
        )

    def overlap(self, units: list[_Unit]) -> list[_Unit]:
        """The tail of a chunk to repeat at the start of the next: whole units, else whole sentences, else words.

        Never a fence or table, nor anything holding one: a code block lives in exactly one chunk.
        """
        limit = self.budget.overlap_tokens
        tail: list[_Unit] = []
        for unit in reversed(units):
            if unit.has_code or limit <= 0:
                break
            if self.estimate([unit, *tail]) <= limit:
                tail.insert(0, unit)
                continue
            if not tail:
                tail = self.tail_of(unit, limit)
            break
        return tail

    def tail_of(self, unit: _Unit, limit: int) -> list[_Unit]:
        """The last sentences of `unit` within `limit` tokens, or its last words when even one sentence is too long."""
        sentences = list(self.sentences(unit.start, unit.end))
        tail: list[_Unit] = []
        for start, end in reversed(sentences[1:]):
            candidate = _Unit(start, end, self.tokens_of(start, end))
            if self.estimate([candidate, *tail]) > limit:
                break
            tail.insert(0, candidate)
        if tail:
            return tail
        words = list(_WORD_RE.finditer(self.body, unit.start, unit.end))
        size = min(len(words) - 1, max(1, limit // 2))
        while size >= 1:
            start = words[-size].start()
            tokens = self.tokens_of(start, unit.end)
            if tokens <= limit:
                return [_Unit(start, unit.end, tokens)]
            size = min(size - 1, int(size * limit / tokens))
        return []

    # --- text helpers ----------------------------------------------------------------------------------------

    def join(self, units: list[_Unit]) -> str:
        """The units' text with the note's own whitespace between them; blank-line runs become one blank line."""
        parts = [self.body[units[0].start : units[0].end]]
        for previous, unit in itertools.pairwise(units):
            gap = self.body[previous.end : unit.start]
            parts.append("\n\n" if gap.count("\n") > 1 else gap)
            parts.append(self.body[unit.start : unit.end])
        return "".join(parts)

    def join_cost(self, previous: _Unit, unit: _Unit) -> int:
        """A line break usually costs a token of its own; a space merges into the next word."""
        return 1 if self.body.find("\n", previous.end, unit.start) >= 0 else 0

    def estimate(self, units: list[_Unit]) -> int:
        total = sum(unit.tokens for unit in units)
        return total + sum(self.join_cost(previous, unit) for previous, unit in itertools.pairwise(units))

    def line_of(self, offset: int) -> int:
        """1-based body line holding the character at `offset`."""
        return bisect.bisect_right(self.line_starts, offset)


def _line_starts(lines: list[str]) -> list[int]:
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    return starts


# A heading longer than this is not a heading a citation can show; it is cut, ending in '…'.
RECORDED_HEADING_CHARS = 80


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width] + _ELLIPSIS
