"""Condense: the latest chat message as a standalone search query, plus alternate phrasings for broad questions.

A follow-up such as "and what did I decide about the second one?" finds nothing by itself: the words that matter are
in the conversation. One small LLM call per turn rewrites it into a query that stands alone and, when the question
is broad, up to two alternate phrasings that the pipeline fuses by RRF (more ways in for a question whose answer is
spread over many notes, or whose one or two words may not be the words the notes use).

The call is made only when it can help: when there is a conversation the message may depend on, or when the
message is broad and alternates are wanted. A first message that is already specific is the query as it stands,
with no call and no added latency. Condensing must never stop retrieval: with no language model, on timeout, on any
provider error or a reply that is not the JSON asked for, the raw message is the query (a message that refers back
to the conversation, by the rule in `refers_back`, is also searched joined with the turns before it, see
`with_earlier_turns`; one that stands alone is searched as typed only) and `skipped_reason` says why in a sentence a
person can read (the pipeline shows it in the plan). With a model, the model decides: it returns a message that
stands alone unchanged, and the plan says so.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from secondbrain.config import Config
from secondbrain.errors import ConfigError, SecondbrainError
from secondbrain.llm import EXTRACTIVE, ChatMessage, ChatProvider, ChatRequest, ProviderCatalog, complete_json
from secondbrain.llm.answer_text import answer_words
from secondbrain.llm.extractive import terms
from secondbrain.llm.structured import MalformedReply
from secondbrain.llm.tokens import fit_history, truncate_to_tokens
from secondbrain.retrieve.refers_back import reference

log = logging.getLogger(__name__)

QueryKind = Literal["original", "condensed", "alternate", "with_history"]

MAX_ALTERNATES = 2
# A message longer than this is cut before it is sent: its opening says what is asked, and a pasted 100 KB log would
# make every turn slow and costly (and may not fit a small model's window at all).
MESSAGE_TOKEN_LIMIT = 1000
# The conversation sent with it: the most recent messages within this budget. References ("it", "the second one")
# point at the last few turns, so older turns are worth less than the latency and tokens they cost.
HISTORY_TOKEN_BUDGET = 1500
# Each earlier message is cut to this first, so one long cited answer does not push every older turn out of the
# budget; the gist of an answer, and what the question picks up from it, is at its start.
HISTORY_MESSAGE_TOKEN_LIMIT = 300
# Only this many recent messages are even considered, so a long conversation is not tokenised in full every turn.
HISTORY_MAX_MESSAGES = 12
# A query the model writes is cut to this: a rambling reply must not become a huge search query.
QUERY_TOKEN_LIMIT = 200
# Room for the JSON reply, generous on purpose: for reasoning models the cap also covers their hidden reasoning, and
# a tight one would end the reply before any JSON. The timeout, not this cap, bounds the latency.
REPLY_MAX_TOKENS = 1024
# A message of at most this many content words is broad (see `is_broad`).
BROAD_MAX_CONTENT_WORDS = 2
# `is_broad` reads only the start of a message: a long message is specific by length alone.
BROAD_SCAN_CHARS = 2000

INSTRUCTIONS = (resources.files("secondbrain.retrieve") / "prompts" / "condense.md").read_text(encoding="utf-8")

# Requests for an overview rather than a fact. Each alternative is anchored on words, so "summary" matches and
# "summarily" does not.
_OVERVIEW = re.compile(
    r"""\b(?:
        overview | summar(?:y|ies|ise|ize|ised|ized|ising|izing) | recap | rundown | big\ picture | outline\ of
      | everything\ (?:about|on|regarding|related\ to|i\ (?:know|have|wrote|noted))
      | anything\ (?:about|on|regarding)
      | (?:all|any)\ (?:of\ )?(?:my\ |the\ |our\ )?notes
      | notes\ (?:about|on|regarding|mentioning|related\ to)
      | what\ do(?:es)?\ (?:my|the|our)\ notes?\ (?:say|tell|contain|have)
      | what\ do\ i\ (?:know|have|remember)\ (?:about|on)
      | what\ (?:did|have)\ i\ (?:write|written|wrote|noted|say|said)\ (?:about|on)
      | tell\ me\ (?:about|everything)
      | (?:main|key)\ (?:points|themes|ideas|takeaways|topics|decisions)
      | (?:list|show)\ (?:me\ )?(?:all|every)
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)


def is_broad(message: str) -> bool:
    """Whether `message` is a broad question, one that alternate phrasings help.

    Broad is either of:
    - it asks for an overview rather than a fact ("summarise my notes on X", "what do my notes say about X",
      "everything about X", "tell me about X", "key decisions in X"): the answer is spread over many passages, and
      differently worded queries reach more of them;
    - it has at most two content words once function words are dropped ("kubernetes?", "What is HNSW?", "backup
      strategy"): a query that short is likely to miss notes that use other words for the same thing (a synonym,
      the expanded abbreviation), which is what alternates add.

    Anything else (a question naming three or more things, "How did I configure Postgres backups on the NAS?") is
    specific: the words are already there and an extra LLM call on the first turn would only add latency.
    """
    text = " ".join(message[:BROAD_SCAN_CHARS].split())
    if _OVERVIEW.search(text):
        return True
    return len(terms(text)) <= BROAD_MAX_CONTENT_WORDS


@dataclass(frozen=True)
class PlannedQuery:
    text: str
    kind: QueryKind


@dataclass(frozen=True)
class Condensed:
    """The queries to search, the standalone one first, then at most `MAX_ALTERNATES` alternates.

    `skipped_reason` is '' when the model planned the queries (rewrote the message, or added alternates to a first
    message that needed no rewriting); otherwise it says, for people, why the message was searched as typed: the
    model returned it unchanged (it stands alone), or no model rewrote it, and then whether it stands alone or
    refers back ("refers back: 'it'"), in which case it was also searched with the turns before it.
    """

    queries: list[PlannedQuery]
    skipped_reason: str


HISTORY_FALLBACK_NOTE = "the message was searched as typed and together with the turns before it"
# What the plan says when the model, given the conversation, returned the message as typed.
STANDS_ALONE_BY_MODEL = "stands alone: the language model returned it as typed"
# The earlier exchanges (a question and its answer) a follow-up is joined with when no model rewrites it.
FALLBACK_EXCHANGES = 2
# Each earlier answer is cut to its opening: it names what was found (the follow-up's subject), and a long cited
# answer would otherwise outweigh the questions in the joined query.
FALLBACK_ANSWER_TOKENS = 60


def with_earlier_turns(message: str, history: Sequence[ChatMessage]) -> PlannedQuery | None:
    """The message after the conversation's last few exchanges, as one query; None when there was no earlier turn.

    Measured on follow-ups of the vaults' question sets with no model (docs/benchmarks.md, tuning log): fusing the
    message as typed with this query took hybrid nDCG@10 on follow-ups from 0.60 to 0.87 (Obsidian Help) and 0.65 to
    0.80 (Rust by Example); the joined query alone, or only the earlier questions without their answers, less.
    """
    parts = earlier_turns(history)
    if not parts:
        return None
    return PlannedQuery(_clean(" ".join([*parts, message])), "with_history")


def earlier_turns(history: Sequence[ChatMessage]) -> list[str]:
    """The texts a follow-up is joined with: the last exchanges, each answer cut to its opening."""
    recent = [m for m in history if m.content.strip()][-2 * FALLBACK_EXCHANGES :]
    parts = [m.content if m.role == "user" else _cut(answer_words(m.content), FALLBACK_ANSWER_TOKENS) for m in recent]
    return [part for part in parts if part.strip()]


def _key(text: str) -> str:
    """What two queries are compared by: case and whitespace do not make a query different."""
    return " ".join(text.split()).casefold()


def _clean(text: str) -> str:
    return truncate_to_tokens(" ".join(text.split()), QUERY_TOKEN_LIMIT)


def _cut(text: str, limit: int) -> str:
    cut = truncate_to_tokens(text, limit)
    return cut if cut == text else cut.rstrip() + " …"


def parse_reply(reply: Any) -> tuple[str, list[str]]:
    """The standalone query and the alternates in a model's parsed JSON reply.

    The query is required (MalformedReply without one). Alternates are taken leniently: items that are not
    non-empty strings are dropped rather than failing the whole reply, because a good query is worth keeping even
    when the extras are garbled. Duplicates (of each other or of the query) are dropped, and the rest capped.
    """
    if not isinstance(reply, dict):
        raise MalformedReply(f"the model's reply was not a JSON object: {str(reply)[:200]!r}")
    query = reply.get("query")
    if not isinstance(query, str) or not query.strip():
        raise MalformedReply(f'the model\'s reply had no "query" string: {str(reply)[:200]!r}')
    query = _clean(query)
    raw = reply.get("alternates")
    alternates: list[str] = []
    seen = {_key(query)}
    for item in raw if isinstance(raw, list) else []:
        text = _clean(item) if isinstance(item, str) else ""
        if not text or _key(text) in seen:
            continue
        seen.add(_key(text))
        alternates.append(text)
    return query, alternates[:MAX_ALTERNATES]


class Condenser:
    """Plans the queries of one turn. `provider` None means no language model: every turn uses the raw message."""

    def __init__(
        self,
        provider: ChatProvider | None,
        model: str | None,
        *,
        timeout_seconds: float = 6.0,
        unavailable_reason: str = "",
    ) -> None:
        if provider is not None and not model:
            raise ValueError("a Condenser with a provider needs a model")
        self.provider = provider
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.unavailable_reason = unavailable_reason or "no language model is available"

    async def condense(
        self, message: str, history: Sequence[ChatMessage], *, condense: bool = True, alternates: bool = True
    ) -> Condensed:
        """The queries for `message` after `history` (oldest first, without `message`). Never raises a domain
        error: every failure falls back to the raw message, with the reason."""

        def as_is(reason: str) -> Condensed:
            return Condensed([PlannedQuery(message, "original")], reason)

        def without_model(reason: str) -> Condensed:
            # A follow-up ("and for an enum?") names its subject in the turns before it: with nothing to rewrite
            # it, it is also searched together with those turns, and the two rankings fused. A message that
            # stands alone is searched as typed: joined with an unrelated conversation it finds that conversation.
            joined = with_earlier_turns(message, history)
            if joined is None:
                return as_is(reason)
            read = reference(message, " ".join(earlier_turns(history)))
            if not read.refers_back:
                return as_is(f"{reason}; {read.reason}")
            return Condensed(
                [PlannedQuery(message, "original"), joined], f"{reason}; {read.reason}, so {HISTORY_FALLBACK_NOTE}"
            )

        if not condense:
            return as_is("condensing is off")
        if not message.strip():
            return as_is("the message is empty")
        context = self._context(history)
        broad = is_broad(message)
        if not context and not broad:
            return as_is("the first message of a conversation is already specific")
        if not context and not alternates:
            return as_is("the first message of a conversation needs no rewriting, and alternate phrasings are off")
        if self.provider is None:
            return without_model(self.unavailable_reason)

        request = self.request(message, context, alternates=alternates, first_turn=not context)
        try:
            # Leaving the block cancels the stream inside complete_json, which closes the HTTP request.
            async with asyncio.timeout(self.timeout_seconds):
                reply, _ = await complete_json(self.provider, request)
            query, extra = parse_reply(reply)
        except TimeoutError:
            log.warning("condense call timed out", extra={"timeout_seconds": self.timeout_seconds})
            return without_model(f"the condense call took longer than {self.timeout_seconds:g} s")
        except SecondbrainError as error:  # provider messages are already scrubbed of keys
            log.warning("condense call failed", extra={"error": str(error)})
            return without_model(f"the condense call failed: {error}")

        reason = ""
        if context and _key(query) != _key(message):
            first = PlannedQuery(query, "condensed")
        else:
            # A first message already stands alone: the call was for its alternates, and the person's own words
            # are the best lexical query. A rewrite identical to the message is not a rewrite either: the model
            # found that the message stands alone (the prompt asks for it unchanged then).
            first = PlannedQuery(message, "original")
            if context:
                reason = STANDS_ALONE_BY_MODEL
        taken = {_key(first.text), _key(message)}
        planned = [first]
        if alternates:
            planned += [PlannedQuery(text, "alternate") for text in extra if _key(text) not in taken]
        return Condensed(planned, reason)

    def _context(self, history: Sequence[ChatMessage]) -> list[ChatMessage]:
        recent = [
            ChatMessage(m.role, _cut(m.content, HISTORY_MESSAGE_TOKEN_LIMIT))
            for m in history[-HISTORY_MAX_MESSAGES:]
            if m.content.strip()
        ]
        return fit_history(recent, HISTORY_TOKEN_BUDGET)

    def request(
        self, message: str, context: Sequence[ChatMessage], *, alternates: bool, first_turn: bool
    ) -> ChatRequest:
        """The one request of a turn. The conversation goes in as a transcript inside a single user message rather
        than as chat turns, so the model rewrites the latest message instead of answering it."""
        if not alternates:
            wanted = "Alternates: none; leave the list empty."
        elif first_turn:
            wanted = f"Alternates: write {MAX_ALTERNATES}."
        else:
            wanted = (
                f"Alternates: write up to {MAX_ALTERNATES} only if the standalone query is broad (it asks for an "
                "overview or a summary, or names its subject in a word or two); otherwise leave the list empty."
            )
        parts = []
        if context:
            transcript = "\n\n".join(f"{m.role.capitalize()}: {m.content}" for m in context)
            parts.append(f"<conversation>\n{transcript}\n</conversation>")
        parts.append(f"<latest_message>\n{_cut(message, MESSAGE_TOKEN_LIMIT)}\n</latest_message>")
        parts.append(wanted)
        assert self.model is not None  # set whenever there is a provider
        return ChatRequest(
            model=self.model,
            system=INSTRUCTIONS,
            messages=[ChatMessage("user", "\n\n".join(parts))],
            max_tokens=REPLY_MAX_TOKENS,
        )


def _listing(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _no_model_reason(catalog: ProviderCatalog) -> str:
    available = set(catalog.available())
    missing = [
        " and ".join(preset.requires_env)
        for provider_id, preset in catalog.presets.providers.items()
        if preset.protocol != "extractive" and preset.requires_env and provider_id not in available
    ]
    if available - {EXTRACTIVE}:
        # A language model is available, but chat.default_provider chose the extractive one on purpose.
        return (
            "the chat provider is the extractive one, which is not a language model "
            "(set retrieve.condense_provider to condense with another)"
        )
    return "no language model is available" + (f" (set {_listing(missing)})" if missing else "")


def create_condenser(
    config: Config, env: Mapping[str, str] | None = None, answer_provider: str = "", answer_model: str = ""
) -> Condenser:
    """The condenser a turn asks for: the vault's `retrieve.condense_provider` when it names one; else the provider
    and model the turn's answer is written with (`answer_provider`, `answer_model`: what the person chose in the chat
    settings, sent with the request), so a follow-up is condensed by the model they chose and a local server is
    never sent a model it does not serve; else the chat default. `retrieve.condense_model` wins over the model
    when it is one of the provider's (a cheaper model of the same vendor, say).

    Raises ConfigError for a vault-configured provider or model that does not exist. An answer's provider or model
    that is not a known pair is ignored (the default condenses). A provider without its key, or the extractive one,
    gives a condenser that explains on every turn why it does not condense, rather than stopping retrieval.
    """
    section = config.vault.retrieve
    catalog = ProviderCatalog.from_config(config, env)
    timeout = section.condense_timeout_seconds
    configured_model = section.condense_model
    answer = catalog.presets.provider(answer_provider) if answer_provider else None
    if answer is not None and answer_model and answer.model(answer_model) is None:
        answer = None
    if section.condense_provider is None and answer is not None:
        provider_id, default_model = answer_provider, answer_model or answer.default_model
        if configured_model and answer.model(configured_model) is None:
            configured_model = None  # a model of another provider: the answer's own model condenses
    elif section.condense_provider is None:
        choice = catalog.default()
        provider_id, default_model = choice.provider, choice.model
    else:
        provider_id = section.condense_provider
        preset = catalog.presets.provider(provider_id)
        if preset is None:
            known = ", ".join(catalog.presets.providers)
            raise ConfigError(
                f"secondbrain.json: retrieve.condense_provider: unknown provider {provider_id!r}; known: {known}"
            )
        default_model = preset.default_model
    preset = catalog.presets.providers[provider_id]
    if preset.protocol == "extractive":
        return Condenser(None, None, timeout_seconds=timeout, unavailable_reason=_no_model_reason(catalog))
    option = next(option for option in catalog.options() if option.id == provider_id)
    if not option.available:
        reason = f"the condense provider {preset.display_name} is not available ({option.unavailable_reason})"
        return Condenser(None, None, timeout_seconds=timeout, unavailable_reason=reason)
    model = configured_model or default_model
    if preset.model(model) is None:
        models = ", ".join(m.id for m in preset.models)
        raise ConfigError(
            f"secondbrain.json: retrieve.condense_model: {model!r} is not a model of {provider_id}; choose one of: "
            f"{models}"
        )
    return Condenser(catalog.provider(provider_id), model, timeout_seconds=timeout)
