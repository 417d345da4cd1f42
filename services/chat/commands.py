"""`secondbrain ask`: one question, answered in the terminal as it streams, with its sources listed under it; stored
as a conversation only with --save or --conversation.

It uses a running chat service when one answers. Otherwise it answers through a chat server of its own, started in
this process (`secondbrain.service.access`), which reaches retrieval the way the chat service always does, over gRPC:
the running retrieve service, or one started here too on a free port.
"""

from __future__ import annotations

import json
import re
from datetime import datetime

from google.protobuf.json_format import MessageToDict
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.text import Text

from secondbrain.chat.v1 import chat_service_pb2 as pb
from secondbrain.chat.v1 import chat_service_pb2_grpc as pb_grpc
from secondbrain.cli.terminal import MarkdownStream, hanging, stdout_console
from secondbrain.config import Config
from secondbrain.date_sources import said
from secondbrain.errors import Unavailable
from secondbrain.note_tools.formatting import located
from secondbrain.service.access import connect, streaming
from secondbrain.v1 import retrieval_pb2 as common

_CITATION = re.compile(r"\[(\d+)\]")


async def run_ask(
    config: Config,
    question: str,
    *,
    conversation: str | None,
    address: str | None,
    mode: str = "",
    as_json: bool,
    save: bool = False,
    since: str = "",
    until: str = "",
    now: str = "",
) -> int:
    """One question answered at the terminal. Kept as a conversation only when asked (`save`) or continuing one: a
    question asked at a terminal is not a conversation the web UI should list (found by a user: after one session
    the list held seventeen look-alikes)."""
    err = Console(stderr=True, soft_wrap=True)
    # At a terminal the answer is rendered markdown wrapped at words; into a pipe it is the text as written, no line
    # broken at the console's width (80 columns when piped, which split note paths).
    out = stdout_console()
    async with connect(config, "chat", address, pb_grpc.ChatServiceStub, err, doing="answering") as chat:
        if conversation is None and save:
            created = await chat.CreateConversation(pb.CreateConversationRequest(), timeout=30)
            conversation = created.conversation.id
        # The terminal's own clock and zone unless told a moment: "yesterday" in the question is the asker's.
        now = now or datetime.now().astimezone().isoformat(timespec="seconds")
        filters = common.RetrievalFilters(date_from=since, date_to=until)
        if conversation is None:
            request = pb.AnswerRequest(content=question, mode=mode, filters=filters, now=now)
            call = chat.Answer(request, timeout=600)
        else:
            call = chat.SendMessage(
                pb.SendMessageRequest(
                    conversation_id=conversation, content=question, mode=mode, filters=filters, now=now
                ),
                timeout=600,
            )
        passages: list = []
        answer: list[str] = []
        written = MarkdownStream(out)
        failed = False
        async with streaming(call) as stream:
            kind = ""
            async for event in stream:
                kind_before, kind = kind, event.WhichOneof("event")
                if as_json:
                    print(json.dumps(MessageToDict(event, preserving_proto_field_name=True)), flush=True)
                if kind == "sources":
                    passages = list(event.sources.retrieval.passages)
                    if event.sources.mode_reason and not as_json:
                        err.print(f"[dim]{escape(event.sources.mode_reason)}[/dim]")
                elif kind == "tool_result":
                    passages += event.tool_result.passages
                    if not as_json:
                        out.print(_step(out, event.tool_result))
                elif kind == "delta":
                    if not as_json and not answer and kind_before == "tool_result":
                        out.print()  # the steps, a blank line, the answer
                    answer.append(event.delta.text)
                    if not as_json:
                        written.write(event.delta.text)
                elif kind == "done" and not as_json:
                    written.close()
                    done = event.done
                    if done.agent_stop_reason:
                        out.print()
                        out.print(f"[dim]Stopped looking: {escape(done.agent_stop_reason)}.[/dim]")
                    out.print()
                    if done.provider == "extractive":  # no model, so no tokens to count: say what it was
                        out.print("[dim]Quoted from your notes; no language model was used.[/dim]")
                    else:
                        out.print(f"[dim]{done.provider}:{done.model} · {done.usage.input_tokens} in, "
                                  f"{done.usage.output_tokens} out[/dim]")  # fmt: skip
                elif kind == "error":
                    failed = True
                    if not as_json:
                        written.close()
                        err.print(f"\n[red]The answer failed:[/red] {escape(event.error.message)}")
        if not as_json:
            written.close()
    if as_json:
        return 1 if failed else 0
    cited = {int(n) for n in _CITATION.findall("".join(answer))}
    shown = [p for p in passages if p.number in cited] or passages
    if shown:
        out.print("[bold]Sources[/bold]")
    for passage in shown:
        where = " > ".join([passage.note_title, *passage.heading_path])
        dated = said(passage.date, passage.date_source)
        lines = f"{located(passage)}{', ' + dated if dated else ''}"
        out.print(hanging(out, f"  [{passage.number}]", Text.assemble(where, "  ", (lines, "dim"))))
    if conversation is not None:
        err.print(f"[dim]Conversation {conversation}: continue it with --conversation {conversation}[/dim]")
    else:
        err.print("[dim]Not kept: --save keeps it as a conversation you can continue.[/dim]")
    if failed:
        raise Unavailable("see the message above")
    return 0


def _step(out: Console, result: pb.ToolResultEvent) -> RenderableType:
    """One agent step as a dim line: what the tool found and the passages it gave, or its error; wrapped at a
    terminal, it goes on under its text."""
    if result.error:
        return hanging(out, "  ✗", Text(f"{result.summary}: {result.error}", "dim"))
    numbers = " ".join(f"[{n}]" for n in result.passage_numbers)
    return hanging(out, "  ·", Text(result.summary + (f"  {numbers}" if numbers else ""), "dim"))
