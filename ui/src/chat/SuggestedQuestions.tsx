// Questions to start from on the empty chat screen, drawn from the vault by the retrieve service
// (SuggestQuestions: each about one of the notes). A click asks it. When the service has none to give, or cannot
// give them (an older server answers UNIMPLEMENTED), nothing is shown: never questions made up here.
import { useEffect, useState } from "react";
import { retrieve } from "../api";
import type { SuggestedQuestion } from "../gen/secondbrain/retrieve/v1/retrieve_service_pb";
import { noteName } from "../notePaths";

const HOW_MANY = 4;

export function SuggestedQuestions({ onAsk, disabled }: { onAsk: (question: string) => void; disabled: boolean }) {
  const [questions, setQuestions] = useState<SuggestedQuestion[]>([]);
  useEffect(() => {
    let current = true;
    retrieve
      .suggestQuestions({ limit: HOW_MANY })
      .then((reply) => current && setQuestions(reply.questions.filter((q) => q.text.trim())))
      .catch(() => undefined); // nothing to suggest is shown as nothing
    return () => {
      current = false;
    };
  }, []);
  if (!questions.length) return null;
  return (
    <section className="suggested" aria-labelledby="suggested-title">
      <h2 id="suggested-title">Questions from your notes</h2>
      <ul>
        {questions.map((q) => (
          <li key={`${q.notePath}\n${q.text}`}>
            <button type="button" onClick={() => onAsk(q.text)} disabled={disabled}>
              <span className="question">{q.text}</span>
              {q.notePath ? <span className="from">from {noteName(q.notePath)}</span> : null}
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
