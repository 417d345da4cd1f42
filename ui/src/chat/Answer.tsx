// An answer with its sources: the answer's markdown rendered (never its HTML), [n] markers as buttons that open the
// passage they cite, the cited sources listed first and the rest folded away, and the retrieval behind the answer
// (how the question was searched, whether the vector arm ran, timings) one click away. In agent mode the tool steps
// the model took come first, folded into one line once the answer is written.
import { useEffect, useRef, useState } from "react";
import type { AgentRun } from "../gen/secondbrain/chat/v1/chat_service_pb";
import type { Passage, RetrievalPlan, RetrievalResult } from "../gen/secondbrain/v1/retrieval_pb";
import { QueryKind } from "../gen/secondbrain/v1/retrieval_pb";
import { Markdown, citedNumbers } from "../Markdown";
import { DateChip } from "../DateChip";

// Clicks on these open a passage, so they do not count as a click outside the open one.
const OPENS_PASSAGE = "data-opens-passage";

function Cite({ passage, onCite }: { passage: Passage; onCite: (passage: Passage) => void }) {
  return (
    <button
      className="cite"
      type="button"
      {...{ [OPENS_PASSAGE]: "" }}
      title={`${passage.notePath}${passage.headingPath.length ? " › " + passage.headingPath.join(" › ") : ""}`}
      onClick={() => onCite(passage)}
    >
      [{passage.number}]
    </button>
  );
}

// The note in Obsidian: obsidian://open takes the vault's name (its folder's name) and the note's path without .md.
export function obsidianUrl(vaultName: string, notePath: string): string {
  const file = notePath.replace(/\.md$/i, "");
  return `obsidian://open?vault=${encodeURIComponent(vaultName)}&file=${encodeURIComponent(file)}`;
}

// The passage panel. Escape closes it (ChatPanel listens, so that only the topmost of it and the settings closes),
// and so does a click anywhere outside it but on another citation, which shows that passage instead.
export function PassageView({
  passage,
  vaultName,
  joinLines = false,
  onClose,
}: {
  passage: Passage;
  vaultName?: string;
  // The vault's Obsidian setting "Strict line breaks": a paragraph's single line breaks are joined.
  joinLines?: boolean;
  onClose: () => void;
}) {
  const panel = useRef<HTMLElement>(null);
  useEffect(() => {
    function outside(event: PointerEvent) {
      const target = event.target;
      if (!(target instanceof Element) || panel.current?.contains(target)) return;
      if (target.closest(`[${OPENS_PASSAGE}]`)) return;
      onClose();
    }
    document.addEventListener("pointerdown", outside);
    return () => document.removeEventListener("pointerdown", outside);
  }, [onClose]);
  return (
    <aside className="passage" role="dialog" aria-label={`Passage ${passage.number}`} ref={panel}>
      <header>
        <strong>[{passage.number}]</strong> <span className="note-path">{passage.notePath}</span>
        <button className="icon" aria-label="Close passage" onClick={onClose}>
          ×
        </button>
      </header>
      <div className="heading-path">{[passage.noteTitle, ...passage.headingPath].join(" › ")}</div>
      <div className="passage-meta muted small">
        <span className="lines">
          {passage.startLine === passage.endLine
            ? `line ${passage.startLine}`
            : `lines ${passage.startLine}–${passage.endLine}`}
        </span>
        <DateChip
          date={passage.date}
          source={passage.dateSource}
          shownIn={[passage.notePath, passage.noteTitle, ...passage.headingPath]}
        />
        {vaultName ? (
          <a className="obsidian" href={obsidianUrl(vaultName, passage.notePath)}>
            Open in Obsidian
          </a>
        ) : null}
      </div>
      <div className={joinLines ? "passage-text md joined-lines" : "passage-text md"}>
        <Markdown text={passage.text} />
      </div>
    </aside>
  );
}

const quoted = (text: string) => `“${text}”`;

// What became of the question before the search: rewritten into a standalone query, or searched as typed and why.
function CondenseOutcome({ plan }: { plan: RetrievalPlan }) {
  const condensed = plan.queries.find((q) => q.kind === QueryKind.CONDENSED);
  const original = plan.queries.find((q) => q.kind === QueryKind.ORIGINAL) ?? plan.queries[0];
  return (
    <div className="condense">
      {condensed ? (
        <div>Rewritten as: {quoted(condensed.text)}</div>
      ) : (
        <>
          <div>Searched as typed{plan.condenseSkippedReason ? `: ${plan.condenseSkippedReason}.` : "."}</div>
          {original ? <div className="query">{quoted(original.text)}</div> : null}
        </>
      )}
    </div>
  );
}

function RetrievalDetails({ sources }: { sources: RetrievalResult }) {
  const plan = sources.plan;
  const box = useRef<HTMLDivElement>(null);
  // Opened under a long answer, the panel may start below the fold: bring it into view.
  useEffect(() => {
    const reduce = window.matchMedia?.("(prefers-reduced-motion: reduce)").matches;
    box.current?.scrollIntoView({ block: "nearest", behavior: reduce ? "auto" : "smooth" });
  }, []);
  const alternates = plan?.queries.filter((q) => q.kind === QueryKind.ALTERNATE) ?? [];
  const withHistory = plan?.queries.filter((q) => q.kind === QueryKind.WITH_HISTORY) ?? [];
  return (
    <div className="details" ref={box} data-testid="plan">
      {plan ? <CondenseOutcome plan={plan} /> : null}
      {plan?.time ? <div className="time-scope">{plan.time}.</div> : null}
      {withHistory.map((q, i) => (
        <div key={`h${i}`}>Also searched with the conversation: {quoted(q.text)}</div>
      ))}
      {alternates.length ? (
        <div>
          Also searched as:
          <ul>
            {alternates.map((q, i) => (
              <li key={i}>{quoted(q.text)}</li>
            ))}
          </ul>
        </div>
      ) : null}
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

// The service's words for an answer the person stopped (services/chat/turn.py): not an error, so not shown as one.
export function isStoppedMessage(error: string | undefined): boolean {
  return !!error && /\bclient cancell?ed\b/i.test(error);
}

function SourceLink({ passage, onCite }: { passage: Passage; onCite: (passage: Passage) => void }) {
  return (
    <li>
      <button className="link" {...{ [OPENS_PASSAGE]: "" }} onClick={() => onCite(passage)}>
        [{passage.number}] {passage.notePath}
        {passage.headingPath.length ? ` › ${passage.headingPath.join(" › ")}` : ""}
      </button>
    </li>
  );
}

export function Answer({
  text,
  sources,
  streaming,
  error,
  stopped,
  incomplete,
  agent,
  onCite,
}: {
  text: string;
  sources?: RetrievalResult;
  streaming?: boolean;
  error?: string;
  stopped?: boolean;
  incomplete?: boolean;
  agent?: AgentView;
  onCite: (passage: Passage) => void;
}) {
  const [showDetails, setShowDetails] = useState(false);
  const passages = sources?.passages ?? [];
  const byNumber = new Map(passages.map((p) => [p.number, p]));
  const cited = citedNumbers(text)
    .map((n) => byNumber.get(n))
    .filter((p): p is Passage => !!p);
  const others = passages.filter((p) => !cited.includes(p));
  const wasStopped = stopped || isStoppedMessage(error);
  return (
    <div className={`message assistant${streaming ? " streaming" : ""}`} data-testid="answer">
      {agent ? (
        <AgentSteps agent={agent} passages={passages} streaming={!!streaming} writing={text !== ""} onCite={onCite} />
      ) : null}
      <div className="text md">
        <Markdown
          text={text}
          citations={{ byNumber, render: (p: Passage) => <Cite key={p.number} passage={p} onCite={onCite} /> }}
        />
        {/* Once text arrives, the cursor is drawn after its last block by the stylesheet. */}
        {streaming && !text ? <span className="cursor" aria-hidden="true" /> : null}
      </div>
      {wasStopped ? (
        <div className="stopped-note" role="status">
          Stopped
        </div>
      ) : error ? (
        <div className="error" role="alert">
          {error}
        </div>
      ) : incomplete ? (
        <div className="muted">This answer stopped part way.</div>
      ) : null}
      {passages.length > 0 ? (
        <div className="sources">
          {cited.length ? (
            <ol aria-label="Cited sources">
              {cited.map((p) => (
                <SourceLink key={p.number} passage={p} onCite={onCite} />
              ))}
            </ol>
          ) : null}
          {others.length ? (
            <details className="also-retrieved">
              <summary>
                {cited.length ? `${others.length} also retrieved` : `${plural(others.length, "passage")} retrieved`}
              </summary>
              <ol aria-label="Also retrieved">
                {others.map((p) => (
                  <SourceLink key={p.number} passage={p} onCite={onCite} />
                ))}
              </ol>
            </details>
          ) : null}
          <button className="link small" aria-expanded={showDetails} onClick={() => setShowDetails(!showDetails)}>
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
