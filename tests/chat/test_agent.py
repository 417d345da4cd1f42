"""Agent mode through gRPC: a scripted model on each provider's wire searches, reads notes and follows a link with the
note tools, against the real retrieve service, and the turn streams, numbers and stores every step."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc
import pytest

from secondbrain.chat import agent
from secondbrain.chat.v1 import chat_service_pb2 as pb
from tests.chat.conftest import ChatStack, eventually, kinds, text_of
from tests.wire import Reply
from tests.wire.script import ToolCall

KITCHEN = "Home/Kitchen.md"
QUOTE = "Areas/Contractor Quote.md"
SAMPLES = "Samples/Worktop Samples.md"
AGENT_NOTES = {
    KITCHEN: (
        "# Kitchen\n\n## Decision\n\nWe chose the pale grey quartz worktop after seeing the samples.\n\n"
        "## Budget\n\nThe contractor's figures are in [[Contractor Quote]].\n"
    ),
    QUOTE: "# Contractor Quote\n\nThe quote assumes a laminate worktop at 900 pounds, fitted in March.\n",
    SAMPLES: "# Worktop Samples\n\nThree samples came: oak, slate and pale grey quartz.\n",
}
QUESTION = "Compare what I decided about the kitchen worktop with what the contractor's quote assumed."
# provider id -> what points it at the stack's servers (besides OpenAI's and Anthropic's own variables)
WIRES = ["openai", "anthropic", "together", "openrouter", "ollama"]


async def _agent_stack(stack: ChatStack, provider: str = "openai") -> None:
    """The stack with the agent notes indexed, every vendor pointed at a wire server, `provider` chosen, agent mode
    on, and one passage per retrieval (so the turn's own retrieval, filtered to Projects/, is passage [1])."""
    for path, text in AGENT_NOTES.items():
        stack.write(path, text)
    await stack.ingest()
    env = {
        **stack.chat_env(),
        "TOGETHER_API_KEY": "tg-test-0123456789",
        "TOGETHER_BASE_URL": stack.llm.base_url,
        "OPENROUTER_API_KEY": "sk-or-test-0123456789",
        "OPENROUTER_BASE_URL": stack.llm.base_url,
        "OLLAMA_URL": stack.llm.root_url,
    }
    await stack.start_chat(env=env)
    settings = pb.Settings(provider=provider, mode="agent", passages=1)
    await stack.stub.UpdateSettings(
        pb.UpdateSettingsRequest(settings=settings, update_mask={"paths": ["provider", "mode", "passages"]}),
        timeout=10,
    )


def _server(stack: ChatStack, provider: str) -> Any:
    return stack.claude if provider == "anthropic" else stack.llm


async def _send(stack: ChatStack, content: str = QUESTION, **fields: Any) -> tuple[str, list[pb.SendMessageResponse]]:
    conversation_id = (await stack.conversation()).id
    request = pb.SendMessageRequest(
        conversation_id=conversation_id, content=content, filters={"folders": ["Projects"]}, **fields
    )
    return conversation_id, [event async for event in stack.stub.SendMessage(request, timeout=60)]


def _tool_results(server: Any) -> list[str]:
    """The tool results the model was sent in its last request, in either vendor's shape."""
    messages = server.requests[-1].json["messages"]
    results = []
    for message in messages:
        if message["role"] == "tool":
            results.append(message["content"])
        elif isinstance(message.get("content"), list):
            results += [block["content"] for block in message["content"] if block.get("type") == "tool_result"]
    return results


@pytest.mark.parametrize("provider", WIRES)
async def test_a_turn_searches_reads_a_note_follows_a_link_and_cites_all_three(stack: ChatStack, provider: str) -> None:
    await _agent_stack(stack, provider)
    server = _server(stack, provider)
    server.script.push(
        Reply(deltas=["Let me look."], tool_calls=[
            ToolCall("retrieve_passages", {"question": "worktop samples", "folder": "Samples", "passages": 1},
                     id="call_search")]),
        Reply(deltas=[], tool_calls=[ToolCall("read_note", {"path": KITCHEN}, id="call_read")]),
        Reply(deltas=[], tool_calls=[ToolCall("note_links", {"path": KITCHEN}, id="call_links")]),
        Reply(deltas=[], tool_calls=[ToolCall("read_note", {"path": QUOTE}, id="call_follow")]),
        Reply(deltas=["You chose pale grey quartz [3] ", "from the samples [2]; the quote assumed laminate [4]."]),
    )  # fmt: skip
    conversation_id, events = await _send(stack)

    assert kinds(events) == ["sources", *["tool_call", "tool_result"] * 4, "delta", "delta", "done"]
    sources = events[0].sources
    assert (sources.mode, sources.mode_reason) == ("agent", "")
    assert [p.note_path for p in sources.retrieval.passages] == ["Projects/Garden.md"]
    calls = [e.tool_call for e in events if e.HasField("tool_call")]
    results = [e.tool_result for e in events if e.HasField("tool_result")]
    assert [(c.id, c.tool) for c in calls] == [
        ("call_search", "retrieve_passages"), ("call_read", "read_note"), ("call_links", "note_links"),
        ("call_follow", "read_note"),
    ]  # fmt: skip
    assert json.loads(calls[1].arguments) == {"path": KITCHEN}
    assert [r.id for r in results] == [c.id for c in calls]
    assert [list(r.passage_numbers) for r in results] == [[2], [3], [], [4]]
    assert [[p.note_path for p in r.passages] for r in results] == [[SAMPLES], [KITCHEN], [], [QUOTE]]
    assert results[1].summary == f"Read {KITCHEN} lines 1-9" and results[1].passages[0].start_line == 1
    assert results[2].summary == f"Links of {KITCHEN}: 1 out, 0 backlinks"
    assert not any(r.error for r in results)
    assert text_of(events) == "You chose pale grey quartz [3] from the samples [2]; the quote assumed laminate [4]."
    assert events[-1].done.agent_stop_reason == ""
    assert {t.stage for t in events[-1].done.timings} >= {"tools", "agent_overhead"}

    # What the model read: the guide, the tools, and each result numbered in the turn's sequence.
    first, last = server.requests[-5].json, server.requests[-1].json
    tools = {t.get("name") or t["function"]["name"] for t in first["tools"]}
    assert tools == {"search_notes", "retrieve_passages", "read_note", "list_notes", "note_links"}
    system = first["system"] if provider == "anthropic" else first["messages"][0]["content"]
    assert "you may cite those numbers too" in system
    shown = _tool_results(server)
    assert shown[0].startswith("1 passage for 'worktop samples'") and f"[2] {SAMPLES}" in shown[0]
    assert shown[1].startswith(f"[3] {KITCHEN}: Kitchen, lines 1-9 of 9") and "[[Contractor Quote]]" in shown[1]
    assert f"[[Contractor Quote]] → {QUOTE}" in shown[2]
    assert shown[3].startswith(f"[4] {QUOTE}") and "laminate worktop" in shown[3]
    assert last["tool_choice"] in ("auto", {"type": "auto"})

    # Stored: the answer, every passage the turn numbered, and every step.
    answer = (await stack.get(conversation_id)).messages[1]
    assert answer.content == text_of(events) and answer.status == pb.MESSAGE_STATUS_COMPLETE
    assert [p.number for p in answer.sources.passages] == [1, 2, 3, 4]
    assert [p.note_path for p in answer.sources.passages] == ["Projects/Garden.md", SAMPLES, KITCHEN, QUOTE]
    assert answer.agent.mode == "agent" and answer.agent.stop_reason == ""
    assert [(s.id, s.tool, s.summary, list(s.passage_numbers)) for s in answer.agent.steps] == [
        (c.id, c.tool, r.summary, list(r.passage_numbers)) for c, r in zip(calls, results, strict=True)
    ]
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (5 * 12, 5 * 4), "the steps' usage summed"


async def test_an_unknown_tool_and_bad_arguments_are_tool_errors_the_model_reads(stack: ChatStack) -> None:
    await _agent_stack(stack)
    stack.llm.script.push(
        Reply(deltas=[], tool_calls=[
            ToolCall("delete_note", {"path": KITCHEN}, id="call_unknown"),
            ToolCall("read_note", {"path": 7, "colour": "red"}, id="call_bad"),
            ToolCall("search_notes", raw='{"query": "worktop"', id="call_json"),
            ToolCall("read_note", {"path": "Nowhere.md"}, id="call_missing"),
            # An integer Python will not read (issue 47, H4): the turn went on failing, not the tool.
            ToolCall("list_notes", raw='{"limit": ' + "9" * 5000 + "}", id="call_long"),
        ]),
        Reply(deltas=["I could not read that, but [1] is what I have."]),
    )  # fmt: skip
    conversation_id, events = await _send(stack)

    assert kinds(events)[-1] == "done"
    errors = [e.tool_result.error for e in events if e.HasField("tool_result")]
    assert errors[0] == (
        "there is no tool 'delete_note'; the tools are search_notes, retrieve_passages, read_note, list_notes, "
        "note_links, related_notes, ask"
    )
    assert errors[1] == "read_note: path input should be a valid string; colour is not an argument of this tool"
    assert errors[2].startswith("search_notes: the arguments are not valid JSON")
    assert "the index holds no note at 'Nowhere.md'" in errors[3]
    assert errors[4].startswith("list_notes: the arguments hold a number too long to read")
    assert _tool_results(stack.llm) == [f"Error: {error}" for error in errors]
    stored = (await stack.get(conversation_id)).messages[1]
    assert [s.error for s in stored.agent.steps] == errors
    assert [s.summary for s in stored.agent.steps] == [
        "delete_note failed", "read_note failed", "search_notes failed", "read_note failed", "list_notes failed",
    ]  # fmt: skip


async def test_a_model_that_never_stops_is_cut_at_the_step_limit_with_an_answer(stack: ChatStack) -> None:
    await _agent_stack(stack)
    listing = Reply(deltas=[], tool_calls=[ToolCall("list_notes", {"limit": 2}, id="call_list")])
    stack.llm.script.push(*[listing] * 6, Reply(deltas=["From what I found [1]."]))
    _, events = await _send(stack)

    assert kinds(events).count("tool_call") == 6 and kinds(events)[-2:] == ["delta", "done"]
    assert text_of(events) == "From what I found [1]."
    done = events[-1].done
    assert done.agent_stop_reason == "the step limit (6 tool steps) was reached"
    final = stack.llm.requests[-1].json
    assert final["tool_choice"] == "none"
    assert "You can call no more tools: the step limit (6 tool steps) was reached" in final["messages"][0]["content"]

    # A model that keeps calling tools even then: the turn answers with what was gathered.
    stack.llm.script.push(*[listing] * 7)
    conversation_id, events = await _send(stack)
    assert kinds(events).count("tool_call") == 6 and kinds(events)[-1] == "done"
    assert text_of(events) == (
        "I stopped before writing an answer: the step limit (6 tool steps) was reached. The passages gathered are [1]."
    )
    assert (await stack.get(conversation_id)).messages[1].agent.stop_reason == done.agent_stop_reason


async def test_stop_during_a_tool_call_cancels_it_and_stores_what_was_done(
    stack: ChatStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _agent_stack(stack)
    started, cancelled = asyncio.Event(), asyncio.Event()
    real_find = agent.find

    async def slow_find(services: Any, name: str, arguments: Any) -> Any:
        if name == "note_links":
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
        return await real_find(services, name, arguments)

    monkeypatch.setattr(agent, "find", slow_find)
    stack.llm.script.push(
        Reply(deltas=[], tool_calls=[ToolCall("read_note", {"path": KITCHEN}, id="call_read")]),
        Reply(deltas=[], tool_calls=[ToolCall("note_links", {"path": KITCHEN}, id="call_links")]),
    )
    conversation_id = (await stack.conversation()).id
    call = stack.stub.SendMessage(pb.SendMessageRequest(conversation_id=conversation_id, content=QUESTION))
    seen = []
    async for event in call:
        seen.append(event.WhichOneof("event"))
        if seen.count("tool_call") == 2:
            break
    await asyncio.wait_for(started.wait(), 10)
    call.cancel()
    await asyncio.wait_for(cancelled.wait(), 10)

    async def stored() -> pb.Message | None:
        messages = (await stack.get(conversation_id)).messages
        return messages[1] if messages[1].status == pb.MESSAGE_STATUS_INCOMPLETE else None

    answer = await eventually(stored)
    assert answer.error == "the client cancelled the request before the answer began"
    assert [(s.tool, s.summary) for s in answer.agent.steps] == [
        ("read_note", f"Read {KITCHEN} lines 1-9"), ("note_links", "stopped before it finished"),
    ]  # fmt: skip
    assert [p.note_path for p in answer.sources.passages][-1] == KITCHEN
    assert call.cancelled()


async def test_the_extractive_provider_runs_agent_mode_as_rag_and_says_why(stack: ChatStack) -> None:
    await _agent_stack(stack, "extractive")
    conversation_id, events = await _send(stack, "How often do I water the tomatoes?")
    assert kinds(events)[0] == "sources" and "tool_call" not in kinds(events) and kinds(events)[-1] == "done"
    sources = events[0].sources
    assert sources.mode == "rag"
    assert sources.mode_reason == (
        "the extractive provider quotes the passages and has no model to call tools; choose a model provider; "
        "this turn ran as rag"
    )
    stored = (await stack.get(conversation_id)).messages[1]
    assert (stored.agent.mode, stored.agent.mode_reason) == ("rag", sources.mode_reason)


async def test_a_turn_may_choose_its_mode_and_a_wrong_one_is_refused(stack: ChatStack) -> None:
    await _agent_stack(stack)
    stack.llm.script.push(Reply(deltas=["Every morning [1]."]))
    _, events = await _send(stack, "How often do I water the tomatoes?", mode="rag")
    assert events[0].sources.mode == "rag" and "tools" not in stack.answer_requests()[-1].json
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _send(stack, mode="autopilot")
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "mode is 'autopilot': choose 'rag'" in (refused.value.details() or "")


@pytest.mark.parametrize(
    ("limits", "reason", "calls"),
    [
        # Room for six listings of the notes (80 tokens each).
        (
            {"tool_tokens": 500, "max_steps": 10},
            "the tool results filled the room the model's context leaves for them",
            6,
        ),
        ({"seconds": 0.001}, "the time limit (0.001 s) was reached", 1),
    ],
)
async def test_the_token_and_time_limits_end_the_loop_with_an_answer(
    stack: ChatStack, limits: dict[str, float], reason: str, calls: int
) -> None:
    await _agent_stack(stack)
    await stack.configure(chat={"default_provider": "openai", "agent": limits})
    listing = Reply(deltas=[], tool_calls=[ToolCall("list_notes", {}, id="call_list")])
    stack.llm.script.push(*[listing] * calls, Reply(deltas=["What I have [1]."]))
    _, events = await _send(stack)

    assert kinds(events).count("tool_call") == calls and text_of(events) == "What I have [1]."
    assert events[-1].done.agent_stop_reason == reason
    assert stack.llm.requests[-1].json["tool_choice"] == "none"
