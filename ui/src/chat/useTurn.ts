// One turn of a conversation, live: the question shows at once, then the retrieval's sources, the agent's tool
// steps and the answer's text as they stream, until done, an error, or the person's Stop. Afterwards the stored
// conversation is the truth: the answer as the server kept it, complete or not.
import { useRef, useState } from "react";
import { chat, describeError, isAbort, isUnauthenticated } from "../api";
import {
  type Conversation,
  MessageStatus,
  type SendMessageResponse,
} from "../gen/secondbrain/chat/v1/chat_service_pb";
import type { Passage, RetrievalResult } from "../gen/secondbrain/v1/retrieval_pb";
import type { AgentView } from "./AgentSteps";
import { localNow } from "./when";

const SETTLE_WITHIN_MS = 5000;

export interface LiveTurn {
  // Unset until the conversation a first question starts exists.
  conversationId?: string;
  question: string;
  sources?: RetrievalResult;
  text: string;
  error?: string;
  // The person pressed Stop.
  stopped?: boolean;
  // The service turned the question away before storing anything (too long, too many questions): the stream ended
  // in an error before its first event.
  refused?: boolean;
  agent?: AgentView;
}

export interface TurnRequest {
  question: string;
  // The conversation, made when the question is its first.
  conversationId: () => Promise<string>;
  // "rag" or "agent" for this turn; "" takes the settings' mode.
  mode: string;
  // The question is stored (its sources have come): the conversation list can show it.
  onStored?: () => void;
  // The turn's RetrievalFilters: the notes of an "Ask about this note" conversation.
  filters?: () => Promise<{ notes: string[] } | undefined>;
}

// The conversation once its last answer is no longer pending: a stopped stream is recorded by the service a
// moment after the browser lets go of it.
export async function settled(id: string): Promise<Conversation | undefined> {
  const deadline = Date.now() + SETTLE_WITHIN_MS;
  for (;;) {
    const conversation = (await chat.getConversation({ id })).conversation;
    const last = conversation?.messages.at(-1);
    if (last?.status !== MessageStatus.PENDING || Date.now() > deadline) return conversation;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

// The turn's passages: the retrieval's, then those the tools added (numbered after them by the service).
function withToolPassages(turn: LiveTurn, added: Passage[]): LiveTurn {
  if (!turn.sources || !added.length) return turn;
  return { ...turn, sources: { ...turn.sources, passages: [...turn.sources.passages, ...added] } };
}

type Event = SendMessageResponse["event"];

function applied(turn: LiveTurn, event: Event): LiveTurn {
  switch (event.case) {
    case "sources": {
      const { retrieval, mode, modeReason } = event.value;
      return { ...turn, sources: retrieval, agent: { mode, modeReason, steps: [], stopReason: "" } };
    }
    case "toolCall": {
      if (!turn.agent) return turn;
      const { id, tool, arguments: args } = event.value;
      const step = { id, tool, arguments: args, summary: "", passageNumbers: [], error: "", running: true };
      return { ...turn, agent: { ...turn.agent, steps: [...turn.agent.steps, step] } };
    }
    case "toolResult": {
      if (!turn.agent) return turn;
      const { id, summary, passageNumbers, passages, error } = event.value;
      const at = turn.agent.steps.findIndex((s) => s.running && s.id === id);
      const steps = turn.agent.steps.map((s, i) =>
        i === at ? { ...s, summary, passageNumbers, error, running: false } : s,
      );
      return withToolPassages({ ...turn, agent: { ...turn.agent, steps } }, passages);
    }
    case "delta":
      return { ...turn, text: turn.text + event.value.text };
    case "done":
      return turn.agent ? { ...turn, agent: { ...turn.agent, stopReason: event.value.agentStopReason } } : turn;
    case "error":
      return { ...turn, error: event.value.message };
    default:
      return turn;
  }
}

export function useTurn(onUnauthenticated: () => void) {
  const [live, setLive] = useState<LiveTurn>();
  // The stream is open: Stop is offered. (The turn stays live a moment longer, until the stored answer is read.)
  const [busy, setBusy] = useState(false);
  const abort = useRef<AbortController | undefined>(undefined);

  // Runs the turn; resolves with the turn as it ended (its conversation id set when one was made).
  async function run(request: TurnRequest): Promise<LiveTurn> {
    const controller = new AbortController();
    abort.current = controller;
    setBusy(true);
    let turn: LiveTurn = { question: request.question, text: "" };
    let answered = false;
    setLive(turn);
    try {
      const conversationId = await request.conversationId();
      turn = { ...turn, conversationId };
      setLive(turn);
      const filters = await request.filters?.();
      for await (const response of chat.sendMessage(
        { conversationId, content: request.question, mode: request.mode, now: localNow(), filters },
        { signal: controller.signal },
      )) {
        answered = true;
        if (response.event.case === "sources") request.onStored?.();
        turn = applied(turn, response.event);
        setLive(turn);
      }
    } catch (e) {
      if (isAbort(e) || controller.signal.aborted) {
        turn = { ...turn, stopped: true };
      } else {
        if (isUnauthenticated(e)) onUnauthenticated();
        turn = { ...turn, error: describeError(e), refused: !answered && turn.conversationId !== undefined };
      }
      setLive(turn);
    } finally {
      abort.current = undefined;
      setBusy(false);
    }
    return turn;
  }

  return {
    // No second question goes out while a turn is live.
    live,
    busy,
    run,
    stop: () => abort.current?.abort(),
    // The stored conversation has taken over.
    finish: () => setLive(undefined),
  };
}
