"""Contextual enrichment (optional): one LLM call per changed note writes one line of context per chunk.

The context is stored in its own column, embedded with the chunk and indexed for keyword search; the text shown to
a person stays the original. When the call fails the note is embedded without context, never skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources

from secondbrain.errors import SecondbrainError
from secondbrain.ingest.chunker import Chunk
from secondbrain.ingest.note import ParsedNote
from secondbrain.llm import ChatMessage, ChatProvider, ChatRequest, complete_json
from secondbrain.llm.tokens import truncate_to_tokens

NOTE_TOKEN_LIMIT = 6000
MAX_CONTEXT_CHARS = 300
INSTRUCTIONS = (resources.files("secondbrain.ingest") / "prompts" / "contextualize.md").read_text(encoding="utf-8")


class Contextualizer:
    def __init__(self, provider: ChatProvider, model: str) -> None:
        self.provider = provider
        self.model = model

    def request(self, note: ParsedNote, chunks: Sequence[Chunk]) -> ChatRequest:
        passages = "\n\n".join(f"[{i + 1}]\n{chunk.text}" for i, chunk in enumerate(chunks))
        prompt = (
            f"<note title={note.title!r}>\n{truncate_to_tokens(note.body, NOTE_TOKEN_LIMIT)}\n</note>\n\n"
            f"<passages>\n{passages}\n</passages>"
        )
        return ChatRequest(
            model=self.model,
            system=INSTRUCTIONS,
            messages=[ChatMessage("user", prompt)],
            max_tokens=60 * len(chunks) + 100,
            # No temperature: some models (OpenAI's reasoning ones) refuse any but their default.
        )

    async def contexts(self, note: ParsedNote, chunks: Sequence[Chunk]) -> list[str]:
        """One line per chunk. Raises SecondbrainError when the model's reply does not fit."""
        reply, _ = await complete_json(self.provider, self.request(note, chunks))
        lines = reply.get("contexts") if isinstance(reply, dict) else reply
        if not isinstance(lines, list) or len(lines) != len(chunks):
            got = len(lines) if isinstance(lines, list) else type(lines).__name__
            raise SecondbrainError(f"the model returned {got} context lines for {len(chunks)} chunks")
        return [" ".join(str(line).split())[:MAX_CONTEXT_CHARS] for line in lines]
