// Agent mode's tool steps above an answer: open while the model is still searching and reading, one folded line
// once it writes; each step says what it did, and the passages it added are citations like the answer's.
import { useState } from "react";
import type { AgentRun } from "../gen/secondbrain/chat/v1/chat_service_pb";
import type { Passage } from "../gen/secondbrain/v1/retrieval_pb";
import { Cite } from "./Cite";

// One tool step as the UI shows it: a stored ToolStep, or a live one whose result has not come back yet.
export interface StepView {
  id: string;
  tool: string;
  arguments: string;
  summary: string;
  passageNumbers: number[];
  error: string;
  running: boolean;
}

// How an answer was found: the mode it ran in, why it ran as rag when agent was asked for, its steps, and why the
// model was stopped from calling more tools.
export interface AgentView {
  mode: string;
  modeReason: string;
  steps: StepView[];
  stopReason: string;
}

export function storedAgent(agent: AgentRun | undefined): AgentView | undefined {
  if (!agent) return undefined;
  return {
    mode: agent.mode,
    modeReason: agent.modeReason,
    steps: agent.steps.map((s) => ({ ...s, running: false })),
    stopReason: agent.stopReason,
  };
}

const RUNNING_VERBS: Record<string, string> = {
  search_notes: "Searching",
  retrieve_passages: "Retrieving passages for",
  read_note: "Reading",
  list_notes: "Listing notes",
  note_links: "Following the links of",
  ask: "Asking",
};

// What a step that has not answered yet is doing, from its tool and arguments: "Reading Home/Kitchen.md…".
function runningLine(step: StepView): string {
  let args: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(step.arguments || "{}");
    if (parsed && typeof parsed === "object") args = parsed as Record<string, unknown>;
  } catch {
    // arguments the model wrote badly: the tool's name is enough
  }
  const text = (value: unknown) => (typeof value === "string" && value ? value : undefined);
  const words = text(args.query) ?? text(args.question);
  const subject = text(args.path) ?? (words ? `‘${words}’` : text(args.folder));
  return `${RUNNING_VERBS[step.tool] ?? `Calling ${step.tool}`}${subject ? ` ${subject}` : ""}…`;
}

function Step({
  step,
  byNumber,
  onCite,
}: {
  step: StepView;
  byNumber: Map<number, Passage>;
  onCite: (passage: Passage) => void;
}) {
  const cited = step.passageNumbers.map((n) => byNumber.get(n)).filter((p): p is Passage => !!p);
  return (
    <li className={step.error ? "failed" : step.running ? "running" : undefined}>
      {step.running ? (
        <span className="muted">{runningLine(step)}</span>
      ) : step.error ? (
        <span className="warning">
          {step.summary || `${step.tool} failed`}: {step.error}
        </span>
      ) : (
        <span>{step.summary || "stopped before it finished"}</span>
      )}
      {cited.length ? (
        <span className="step-passages">
          {cited.map((p) => (
            <Cite key={p.number} passage={p} onCite={onCite} />
          ))}
        </span>
      ) : null}
    </li>
  );
}

export function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

function capitalised(sentence: string): string {
  const text = sentence.charAt(0).toUpperCase() + sentence.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

// The steps above the answer: open while the model is still calling tools, one folded line once it writes.
export function AgentSteps({
  agent,
  passages,
  streaming,
  writing,
  onCite,
}: {
  agent: AgentView;
  passages: Passage[];
  streaming: boolean;
  writing: boolean;
  onCite: (passage: Passage) => void;
}) {
  const [chosen, setChosen] = useState<boolean>();
  const byNumber = new Map(passages.map((p) => [p.number, p]));
  // A step still waiting for its result when the stream ended was stopped.
  const steps = agent.steps.map((s) => (s.running && !streaming ? { ...s, running: false } : s));
  const working = streaming && !writing; // a tool is running or the model is choosing the next
  const failed = steps.filter((s) => s.error).length;
  const open = chosen ?? working;
  if (agent.modeReason && agent.steps.length === 0) {
    return <div className="agent-note muted small">{capitalised(agent.modeReason)}</div>;
  }
  if (agent.steps.length === 0) return null;
  return (
    <div className="agent">
      <details
        className="agent-steps"
        open={open}
        onToggle={(e) => {
          // Only a person's click is a choice; the browser also reports the changes made from `open`.
          if (e.currentTarget.open !== open) setChosen(e.currentTarget.open);
        }}
      >
        <summary>
          {plural(agent.steps.length, "step")}
          {working ? <span> · working…</span> : null}
          {failed ? <span className="muted"> · {failed} failed</span> : null}
        </summary>
        <ol aria-label="Steps">
          {steps.map((step, index) => (
            <Step key={index} step={step} byNumber={byNumber} onCite={onCite} />
          ))}
        </ol>
      </details>
      {agent.stopReason ? (
        <div className="agent-note muted small">Stopped looking: {agent.stopReason}.</div>
      ) : null}
      {agent.modeReason ? <div className="agent-note muted small">{capitalised(agent.modeReason)}</div> : null}
    </div>
  );
}
