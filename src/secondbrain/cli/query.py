"""Asking the notes: `search` (notes), `retrieve` (the passages an answer would read) and `ask` (an answer)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated

import typer

from secondbrain.cli.app import config_with, run
from secondbrain.errors import InvalidInput
from secondbrain.retrieve.filters import parse_now
from secondbrain.retrieve.modes import MODES, Mode

FolderOption = Annotated[
    list[str] | None, typer.Option("--folder", help="Only notes under this folder (repeatable).", show_default=False)
]
TagOption = Annotated[
    list[str] | None,
    typer.Option("--tag", help="Only notes with this tag or a child of it (repeatable).", show_default=False),
]

TypeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--type",
        help="Only files of this type (repeatable): note, pdf, image, canvas, word, presentation, spreadsheet.",
        show_default=False,
    ),
]


def day(text: str) -> str:
    """A --since / --until value: a day as YYYY-MM-DD, said plainly when it is not one."""
    if text.strip():
        try:
            date.fromisoformat(text.strip())
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not a day: write it as YYYY-MM-DD, like 2026-01-20") from None
    return text.strip()


SinceOption = Annotated[
    str,
    typer.Option(
        "--since",
        parser=day,
        help="Only passages dated on or after this day (YYYY-MM-DD; `status --files` shows each note's date).",
        show_default=False,
    ),
]
UntilOption = Annotated[
    str,
    typer.Option(
        "--until", parser=day, help="Only passages dated on or before this day (YYYY-MM-DD).", show_default=False
    ),
]


def moment(text: str) -> str:
    """`--now`'s value as the API takes it: ISO 8601 with its UTC offset."""
    if not text.strip():
        return ""
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise typer.BadParameter(
            f"{text!r} is not a moment with its UTC offset: write it like 2026-11-30T18:00:00+00:00"
        )
    try:  # the services' own rule for an asker's moment (its years), said here before any service is asked
        parse_now(parsed.isoformat())
    except InvalidInput as error:
        raise typer.BadParameter(str(error)) from None
    return parsed.isoformat()


NowOption = Annotated[
    str,
    typer.Option(
        "--now",
        parser=moment,
        help="Ask as of this moment (ISO 8601 with its UTC offset): 'last week' in the question is the week before "
        "it. Default: this terminal's clock.",
        show_default=False,
    ),
]
AddressOption = Annotated[
    str | None, typer.Option(help="host:port of a retrieve service to use; default the configured one.")
]

# What `search --mode` called the lexical and vector arms before they had one name everywhere: still accepted, so
# old scripts keep working, and no longer shown.
FORMER_SEARCH_MODES: dict[str, Mode] = {"keyword": "lexical", "semantic": "vector"}


def search_mode(word: str) -> Mode:
    """The arms `search --mode WORD` runs."""
    mode = FORMER_SEARCH_MODES.get(word, word)
    if mode not in MODES:
        raise ValueError(f"{word!r} is not one of {', '.join(map(repr, MODES))}.")
    return mode  # type: ignore[return-value]


def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    mode: Annotated[
        Mode, typer.Option(parser=search_mode, help="lexical: every word must match; vector: by meaning.")
    ] = "hybrid",
    folder: FolderOption = None,
    tag: TagOption = None,
    file_type: TypeOption = None,
    since: SinceOption = "",
    until: UntilOption = "",
    limit: Annotated[int, typer.Option(help="Most notes to list.", min=1, max=100)] = 10,
    address: AddressOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the ranked notes as JSON.")] = False,
) -> None:
    """Find notes: lexical (every word, "phrases", -exclusions, and substrings of titles and text), vector (by meaning),
    or both fused (the default). Prints each note with a snippet."""
    from secondbrain.retrieve.commands import run_search

    run(
        run_search(
            config_with(),
            query,
            mode=mode,
            folders=folder or [],
            tags=tag or [],
            file_types=file_type or [],
            since=since,
            until=until,
            limit=limit,
            address=address,
            as_json=as_json,
        )
    )


def retrieve(
    question: Annotated[str, typer.Argument(help="A question about your notes.")],
    passages: Annotated[int, typer.Option(help="Passages to return (0: the configured default).", min=0, max=50)] = 0,
    mode: Annotated[Mode, typer.Option(help="Which arms run.")] = "hybrid",
    folder: FolderOption = None,
    tag: TagOption = None,
    file_type: TypeOption = None,
    since: SinceOption = "",
    until: UntilOption = "",
    now: NowOption = "",
    condense: Annotated[bool, typer.Option(help="Let an LLM add alternate phrasings of a broad question.")] = True,
    rerank: Annotated[
        bool | None,
        typer.Option("--rerank/--no-rerank", help="Rerank with the configured reranker.", show_default=False),
    ] = None,
    address: AddressOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan, ranked notes and passages as JSON.")] = False,
) -> None:
    """Show the numbered passages a chat answer would read for QUESTION, with where each comes from."""
    from secondbrain.retrieve.commands import run_retrieve

    run(
        run_retrieve(
            config_with(),
            question,
            mode=mode,
            folders=folder or [],
            tags=tag or [],
            file_types=file_type or [],
            since=since,
            until=until,
            now=now,
            passages=passages,
            condense=condense,
            rerank=rerank,
            address=address,
            as_json=as_json,
        )
    )


def ask(
    question: Annotated[str, typer.Argument(help="A question about your notes.")],
    conversation: Annotated[
        str | None, typer.Option(help="Continue this conversation (its id), adding the turn to it.", show_default=False)
    ] = None,
    save: Annotated[
        bool,
        typer.Option(
            "--save",
            help="Keep the question and answer as a new conversation (the web UI lists it; continue it with "
            "--conversation). Without it, or --conversation, nothing is stored.",
        ),
    ] = False,
    since: SinceOption = "",
    until: UntilOption = "",
    now: NowOption = "",
    address: Annotated[str | None, typer.Option(help="host:port of a chat service to use.")] = None,
    agent: Annotated[
        bool | None,
        typer.Option(
            "--agent/--rag",
            help="--agent: the model may also search, read notes and follow links before it answers, each step "
            "printed; --rag: one retrieval, then the answer. Default: the chat settings' mode.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print each event (sources, tool_call, tool_result, delta, done) as JSON.")
    ] = False,
) -> None:
    """Ask a question: the answer streams in as it is written, citing passages [n] listed under it.

    Uses the configured chat provider (see `secondbrain --help`); with no API key set, the extractive provider
    quotes the best-matching sentences of your notes instead (and has no agent mode: it answers as --rag).
    """
    from secondbrain.chat.commands import run_ask

    mode = "" if agent is None else "agent" if agent else "rag"
    raise typer.Exit(
        run(
            run_ask(
                config_with(),
                question,
                conversation=conversation,
                save=save,
                since=since,
                until=until,
                now=now,
                address=address,
                mode=mode,
                as_json=as_json,
            )
        )
    )
