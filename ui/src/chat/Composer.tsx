// Where a question is written: the scope chip when the conversation is about one note, the question (Enter sends,
// Shift+Enter is a new line), the Agent toggle for the next turns, and Send, or Stop while an answer streams.
import { Link } from "react-router";
import { noteUrl } from "../routes";
import { noteName } from "../notePaths";
import { MOST_NOTES } from "./scope";
import "./composer.css";

export interface Scope {
  path: string;
  // How many linked notes the conversation reads besides the note; undefined until GetNoteLinks answers.
  linked?: number;
}

function ScopeChip({ scope, onRemove }: { scope: Scope; onRemove: () => void }) {
  const name = noteName(scope.path);
  const reads =
    scope.linked === undefined
      ? `Answers read only ${name} and the notes it links to`
      : scope.linked >= MOST_NOTES - 1
        ? `Answers read only ${name} and the first ${scope.linked} notes it links to`
        : `Answers read only ${name} and the ${scope.linked} note${scope.linked === 1 ? "" : "s"} it links to`;
  return (
    <div className="scope-chip" data-testid="scope">
      <Link to={noteUrl(scope.path)} title={reads}>
        About: {name}
      </Link>
      <button type="button" aria-label={`Remove “About: ${name}”, ask about every note`} onClick={onRemove}>
        ×
      </button>
    </div>
  );
}

export function Composer({
  textarea,
  scope,
  agentOn,
  agentAvailable,
  busy,
  blocked,
  draft,
  onDraft,
  onRemoveScope,
  onAgent,
  onSend,
  onStop,
}: {
  textarea: React.RefObject<HTMLTextAreaElement | null>;
  // The question being written: kept by the page, which clears it once the question is taken (and gives it back
  // when the service turns it away).
  draft: string;
  onDraft: (text: string) => void;
  scope?: Scope;
  agentOn: boolean;
  agentAvailable: boolean;
  busy: boolean;
  // A turn is live (here or in another conversation): no second question yet.
  blocked: boolean;
  onRemoveScope: () => void;
  onAgent: (on: boolean) => void;
  onSend: (question: string) => void;
  onStop: () => void;
}) {
  return (
    <form
      className="composer"
      aria-label="Ask"
      onSubmit={(e) => {
        e.preventDefault();
        const question = draft.trim();
        if (!question || blocked) return;
        onSend(question);
      }}
    >
      {scope ? <ScopeChip scope={scope} onRemove={onRemoveScope} /> : null}
      <div className="composer-row">
        <textarea
          ref={textarea}
          aria-label="Your question"
          placeholder={scope ? `Ask about ${noteName(scope.path)}…` : "Ask your notes…"}
          value={draft}
          rows={2}
          onChange={(e) => onDraft(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) {
              e.preventDefault();
              e.currentTarget.form?.requestSubmit();
            }
          }}
        />
        <label className="agent-toggle" title="Let the model search and read your notes for this message">
          <input
            type="checkbox"
            checked={agentOn}
            disabled={!agentAvailable}
            onChange={(e) => onAgent(e.target.checked)}
          />
          Agent
        </label>
        {busy ? (
          <button type="button" className="stop" onClick={onStop}>
            Stop
          </button>
        ) : (
          <button type="submit" className="primary" disabled={!draft.trim() || blocked}>
            Send
          </button>
        )}
      </div>
    </form>
  );
}
