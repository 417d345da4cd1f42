// An answer with its sources: the answer's markdown rendered (never its HTML), [n] markers as buttons that open the
// passage they cite, the cited sources listed first (each a link to the reader at its lines) and the rest folded
// away, and the retrieval behind the answer one click away. In agent mode the tool steps the model took come first.
import { useState } from "react";
import type { Passage, RetrievalResult } from "../gen/secondbrain/v1/retrieval_pb";
import { citedNumbers } from "../citedNumbers";
import { LazyMarkdown } from "../LazyMarkdown";
import { AgentSteps, type AgentView, plural } from "./AgentSteps";
import { Cite, ReaderLink, whereIn } from "./Cite";
import { RetrievalDetails } from "./RetrievalDetails";
import "./answer.css";

// The service's words for an answer the person stopped (services/chat/turn.py): not an error, so not shown as one.
export function isStoppedMessage(error: string | undefined): boolean {
  return !!error && /\bclient cancell?ed\b/i.test(error);
}

// One source: its number opens the passage here, its note and heading open the reader at its lines.
function Source({ passage, onCite }: { passage: Passage; onCite: (passage: Passage) => void }) {
  return (
    <li>
      <Cite passage={passage} onCite={onCite} /> <ReaderLink passage={passage}>{whereIn(passage)}</ReaderLink>
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
    <article className={`message assistant${streaming ? " streaming" : ""}`} data-testid="answer" aria-label="Answer">
      {agent ? (
        <AgentSteps agent={agent} passages={passages} streaming={!!streaming} writing={text !== ""} onCite={onCite} />
      ) : null}
      <div className="text md">
        <LazyMarkdown
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
                <Source key={p.number} passage={p} onCite={onCite} />
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
                  <Source key={p.number} passage={p} onCite={onCite} />
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
    </article>
  );
}
