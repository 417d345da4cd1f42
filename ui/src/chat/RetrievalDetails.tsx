// "How were these found?": the retrieval behind an answer, as a person reads it: how the question was searched
// (rewritten or as typed, and why), the time it was read as naming, the other queries, whether the vector arm ran
// and the reranker, and each stage's time.
import { useEffect, useRef } from "react";
import type { RetrievalPlan, RetrievalResult } from "../gen/secondbrain/v1/retrieval_pb";
import { QueryKind } from "../gen/secondbrain/v1/retrieval_pb";

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

export function RetrievalDetails({ sources }: { sources: RetrievalResult }) {
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
