"""What one retrieval takes and gives, apart from how it is done (`pipeline`): its options resolved against the
settings, the question checked, what ranking decided, the chunks in order, and the events a client reads (the plan,
then the numbered passages, then timings)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from secondbrain.errors import InvalidInput, ResourceExhausted
from secondbrain.llm import ChatMessage
from secondbrain.retrieve.condense import PlannedQuery
from secondbrain.retrieve.expand import Excerpt
from secondbrain.retrieve.filters import Filters, parse_now
from secondbrain.retrieve.fusion import Fused
from secondbrain.retrieve.modes import Mode
from secondbrain.vault_config import RetrieveSection

MAX_QUERY_CHARS = 8_000
MAX_HISTORY_MESSAGES = 100
MAX_HISTORY_CHARS = 200_000


@dataclass(frozen=True)
class RetrievalOptions:
    """The knobs of one retrieval, each already resolved against the configured defaults."""

    max_passages: int
    mode: Mode
    condense: bool
    alternates: bool
    rerank: bool
    rerank_model: str | None
    expand_neighbours: bool
    token_budget: int
    # What the turn's answer is written with, so a follow-up is condensed by the same model (see create_condenser).
    answer_provider: str = ""
    answer_model: str = ""
    # The asker's now (aware), which "last week" in the question is read from; None: the server's clock and zone.
    now: datetime | None = None

    @classmethod
    def resolve(
        cls,
        defaults: RetrieveSection,
        *,
        max_passages: int = 0,
        mode: Mode | None = None,
        condense: bool | None = None,
        alternates: bool | None = None,
        rerank: bool | None = None,
        rerank_model: str = "",
        expand_neighbours: bool | None = None,
        token_budget: int = 0,
        answer_provider: str = "",
        answer_model: str = "",
        now: str = "",
    ) -> RetrievalOptions:
        if not 0 <= max_passages <= 50:
            raise InvalidInput(f"max_passages is {max_passages}: ask for 1 to 50 passages, or 0 for the default")
        if not (token_budget == 0 or 100 <= token_budget <= 100_000):
            raise InvalidInput(f"token_budget is {token_budget}: give 100 to 100000 tokens, or 0 for the default")
        return cls(
            max_passages=max_passages or defaults.passages,
            mode=mode or "hybrid",
            condense=defaults.condense if condense is None else condense,
            alternates=defaults.alternates if alternates is None else alternates,
            rerank=defaults.rerank if rerank is None else rerank,
            rerank_model=rerank_model or None,
            expand_neighbours=defaults.expand_neighbours if expand_neighbours is None else expand_neighbours,
            token_budget=token_budget or defaults.token_budget,
            answer_provider=answer_provider,
            answer_model=answer_model,
            now=parse_now(now),
        )


@dataclass(frozen=True)
class Decisions:
    """What ranking decided: the queries it ran, whether the vector arm, condensing and reranking ran (a skip says
    why, for people), and the embedding model. The plan a client sees and the ranking the evaluation reads carry
    them both."""

    queries: list[PlannedQuery]
    vector_arm_ran: bool
    vector_arm_skipped_reason: str
    condense_skipped_reason: str
    reranked: bool
    rerank_skipped_reason: str
    embedding_model: str
    # The time the question named, as retrieval applied it ("Notes dated 23-29 November 2026"); "" when none.
    time: str
    # Whether the search was kept to a range of days (the question's or the request's).
    dated_range: bool


@dataclass(frozen=True)
class Plan(Decisions):
    """What retrieval decided and searched with, sent once the search is done, ahead of the passages."""

    filters: Filters
    mode: Mode
    max_passages: int


@dataclass(frozen=True)
class Passage(Excerpt):
    """A numbered passage, as a client reads it: its excerpt, and how it ranked."""

    number: int
    score: float
    lexical_rank: int | None
    vector_rank: int | None
    fused_score: float
    rerank_score: float | None
    via_link: bool


@dataclass(frozen=True)
class Done:
    timings: list[tuple[str, float]]
    passage_count: int


RetrieveEvent = Plan | Passage | Done


@dataclass(frozen=True)
class RankedChunk:
    """A chunk in the final order: fused across arms and queries, perhaps joined by a link, perhaps reranked."""

    fused: Fused
    via_link: bool = False
    rerank_score: float | None = None


@dataclass(frozen=True)
class Ranking(Decisions):
    """Everything before passages are assembled: what was decided, and the chunks in order."""

    ranked: list[RankedChunk]
    # The filters the search ran with: the request's, with the question's time range when it named one.
    searched: Filters = field(default_factory=Filters)


def validate_query(query: str, history: Sequence[ChatMessage]) -> str:
    text = query.strip()
    if not text:
        raise InvalidInput("the question is empty: type what you want to find in your notes")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInput(f"the question is {len(text)} characters long; keep it under {MAX_QUERY_CHARS}")
    if len(history) > MAX_HISTORY_MESSAGES or sum(len(m.content) for m in history) > MAX_HISTORY_CHARS:
        raise ResourceExhausted(
            f"the history is too long: send at most {MAX_HISTORY_MESSAGES} messages and {MAX_HISTORY_CHARS} "
            "characters (older turns matter little for condensing)"
        )
    return text
