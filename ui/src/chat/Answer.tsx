// An answer with its sources: [n] markers become links to the passage they cite, and the retrieval behind the
// answer (queries, whether the vector arm ran, timings) is one click away.
import { useState } from "react";
import type { Passage, RetrievalResult } from "../gen/secondbrain/v1/retrieval_pb";
import { QueryKind } from "../gen/secondbrain/v1/retrieval_pb";

const CITATION = /\[(\d+)\]/g;

function withCitations(text: string, passages: Passage[], onCite: (passage: Passage) => void) {
  const byNumber = new Map(passages.map((p) => [p.number, p]));
  const parts: React.ReactNode[] = [];
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    const passage = byNumber.get(Number(match[1]));
    if (!passage) continue; // a number with no passage stays plain text
    const at = match.index ?? 0;
    parts.push(text.slice(last, at));
    parts.push(
      <button
        key={`${at}-${passage.number}`}
        className="cite"
        title={`${passage.notePath}${passage.headingPath.length ? " › " + passage.headingPath.join(" › ") : ""}`}
        onClick={() => onCite(passage)}
      >
        [{passage.number}]
      </button>,
    );
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

export function Answer({
  text,
  sources,
  streaming,
  error,
  incomplete,
  onCite,
}: {
  text: string;
  sources?: RetrievalResult;
  streaming?: boolean;
  error?: string;
  incomplete?: boolean;
  onCite: (passage: Passage) => void;
}) {
  const [showDetails, setShowDetails] = useState(false);
  const passages = sources?.passages ?? [];
  return (
    <div className={`message assistant${streaming ? " streaming" : ""}`} data-testid="answer">
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
