// An answer with its sources: [n] markers become links to the passage they cite, and the retrieval behind the
// answer (queries, whether the vector arm ran, timings) is one click away. In agent mode the tool steps the model
// took come first, folded into one line once the answer is written.
import { useState } from "react";
import type { AgentRun } from "../gen/secondbrain/chat/v1/chat_service_pb";
import type { Passage, RetrievalResult } from "../gen/secondbrain/v1/retrieval_pb";
import { QueryKind } from "../gen/secondbrain/v1/retrieval_pb";

const CITATION = /\[(\d+)\]/g;

function Cite({ passage, onCite }: { passage: Passage; onCite: (passage: Passage) => void }) {
  return (
    <button
      className="cite"
      title={`${passage.notePath}${passage.headingPath.length ? " › " + passage.headingPath.join(" › ") : ""}`}
      onClick={() => onCite(passage)}
    >
      [{passage.number}]
    </button>
  );
}

function withCitations(text: string, passages: Passage[], onCite: (passage: Passage) => void) {
  const byNumber = new Map(passages.map((p) => [p.number, p]));
  const parts: React.ReactNode[] = [];
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    const passage = byNumber.get(Number(match[1]));
    if (!passage) continue; // a number with no passage stays plain text
    const at = match.index ?? 0;
    parts.push(text.slice(last, at));
    parts.push(<Cite key={`${at}-${passage.number}`} passage={passage} onCite={onCite} />);
    last = at + match[0].length;
  }
  parts.push(text.slice(last));
  return parts;
}

export function PassageView({ passage, onClose }: { passage: Passage; onClose: () => void }) {
  return (
    <aside className="passage" role="dialog" aria-label={`Passage ${passage.number}`}>
      <header>
        <strong>[{passage.number}]</strong> <span className="note-path">{passage.notePath}</span>
        <button className="icon" aria-label="Close passage" onClick={onClose}>
          ×
        </button>
      </header>
      <div className="heading-path">{[passage.noteTitle, ...passage.headingPath].join(" › ")}</div>
      <div className="lines">
        lines {passage.startLine}–{passage.endLine}
      </div>
      <pre className="passage-text">{passage.text}</pre>
    </aside>
  );
}

const KIND_NAMES: Record<number, string> = {
  [QueryKind.ORIGINAL]: "as asked",
  [QueryKind.CONDENSED]: "standalone",
  [QueryKind.ALTERNATE]: "alternate",
  [QueryKind.WITH_HISTORY]: "with the conversation",
};

function RetrievalDetails({ sources }: { sources: RetrievalResult }) {
  const plan = sources.plan;
  return (
    <div className="details">
      <div>
        <strong>Queries</strong>
        <ul>
          {plan?.queries.map((q, i) => (
            <li key={i}>
              “{q.text}” <span className="muted">({KIND_NAMES[q.kind] ?? "query"})</span>
            </li>
          ))}
        </ul>
      </div>
      <div className="vector-arm">
        Vector search:{" "}
        {plan?.vectorArmRan ? `ran (${plan.embeddingModel})` : `skipped: ${plan?.vectorArmSkippedReason || "unknown"}`}
      </div>
      {plan?.reranked ? <div>Reranked.</div> : null}
      {plan?.rerankSkippedReason ? <div>Rerank skipped: {plan.rerankSkippedReason}</div> : null}
      <div className="muted">
        {sources.timings.map((t) => `${t.stage} ${t.milliseconds.toFixed(0)} ms`).join(" · ")}
      </div>
    </div>
  );
}

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

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

function capitalised(sentence: string): string {
  const text = sentence.charAt(0).toUpperCase() + sentence.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

// The steps above the answer: open while the model is still calling tools, one folded line once it writes.
function AgentSteps({
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

export function Answer({
  text,
  sources,
  streaming,
  error,
  incomplete,
  agent,
  onCite,
}: {
  text: string;
  sources?: RetrievalResult;
  streaming?: boolean;
  error?: string;
  incomplete?: boolean;
  agent?: AgentView;
  onCite: (passage: Passage) => void;
}) {
  const [showDetails, setShowDetails] = useState(false);
  const passages = sources?.passages ?? [];
  return (
    <div className={`message assistant${streaming ? " streaming" : ""}`} data-testid="answer">
      {agent ? (
        <AgentSteps agent={agent} passages={passages} streaming={!!streaming} writing={text !== ""} onCite={onCite} />
      ) : null}
      <div className="text">
        {withCitations(text, passages, onCite)}
        {streaming ? <span className="cursor" aria-hidden="true" /> : null}
      </div>
      {error ? (
        <div className="error" role="alert">
          {error}
        </div>
      ) : incomplete ? (
        <div className="muted">This answer stopped part way.</div>
      ) : null}
      {passages.length > 0 ? (
        <div className="sources">
          <ol>
            {passages.map((p) => (
              <li key={p.number}>
                <button className="link" onClick={() => onCite(p)}>
                  [{p.number}] {p.notePath}
                  {p.headingPath.length ? ` › ${p.headingPath.join(" › ")}` : ""}
                </button>
              </li>
            ))}
          </ol>
          <button className="link small" onClick={() => setShowDetails(!showDetails)}>
            {showDetails ? "Hide how these were found" : "How were these found?"}
          </button>
          {showDetails && sources ? <RetrievalDetails sources={sources} /> : null}
        </div>
      ) : sources && !streaming ? (
        <div className="muted">No passages of your notes matched.</div>
      ) : null}
    </div>
  );
}
