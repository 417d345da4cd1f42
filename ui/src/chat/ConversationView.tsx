// The conversation: its questions and answers, the live turn streaming in at the end, kept scrolled to the newest
// words. Empty, it says who answers and offers questions drawn from the vault. A screen reader hears where the
// live turn is (searching, writing, done, stopped) once per change, not every word.
import { memo, useEffect, useRef, useState } from "react";
import { type Conversation, type Message, MessageStatus } from "../gen/secondbrain/chat/v1/chat_service_pb";
import { MessageRole, type Passage } from "../gen/secondbrain/v1/retrieval_pb";
import { storedAgent } from "./AgentSteps";
import { Answer, isStoppedMessage } from "./Answer";
import { noteName } from "../notePaths";
import { SuggestedQuestions } from "./SuggestedQuestions";
import type { LiveTurn } from "./useTurn";

// A stored answer, drawn again only when it changes: opening a passage or the settings leaves it (and the citation
// that had focus) as it is, so focus can go back to that citation.
const StoredAnswer = memo(function StoredAnswer({
  message,
  onCite,
}: {
  message: Message;
  onCite: (passage: Passage) => void;
}) {
  return (
    <Answer
      text={message.content}
      sources={message.sources}
      incomplete={message.status === MessageStatus.INCOMPLETE}
      stopped={message.status === MessageStatus.INCOMPLETE && isStoppedMessage(message.error)}
      error={message.error || undefined}
      agent={storedAgent(message.agent)}
      onCite={onCite}
    />
  );
});

function phaseOf(live: LiveTurn | undefined, busy: boolean): string {
  if (!live) return "";
  if (live.stopped) return "Stopped.";
  if (live.error) return "The answer failed.";
  if (!busy) return "Answer written.";
  if (live.text) return "Writing the answer…";
  if (live.agent?.steps.length) return "Reading your notes…";
  return "Searching your notes…";
}

function TurnStatus({ live, busy }: { live?: LiveTurn; busy: boolean }) {
  // The last phase said stays said after the turn ends (it is the stored answer now).
  const [said, setSaid] = useState("");
  const phase = phaseOf(live, busy);
  useEffect(() => {
    if (phase) setSaid(phase);
  }, [phase]);
  return (
    <div className="visually-hidden" role="status" aria-live="polite" data-testid="turn-status">
      {said}
    </div>
  );
}

export function ConversationView({
  conversation,
  live,
  busy,
  missing,
  personaName,
  scopePath,
  onCite,
  onAsk,
}: {
  conversation?: Conversation;
  // The live turn, when it is this conversation's.
  live?: LiveTurn;
  busy: boolean;
  // The address names a conversation that is not there (deleted elsewhere).
  missing?: string;
  personaName: string;
  scopePath?: string;
  onCite: (passage: Passage) => void;
  onAsk: (question: string) => void;
}) {
  const bottom = useRef<HTMLDivElement>(null);
  useEffect(() => {
    bottom.current?.scrollIntoView({ block: "end" });
  }, [live?.text, live?.agent?.steps.length, conversation?.messages.length, conversation?.id]);
  const empty = !conversation?.messages.length && !live;
  return (
    <div className="messages">
      {missing ? (
        <p className="empty" role="alert">
          {missing}
        </p>
      ) : empty ? (
        <div className="empty">
          <p>
            {scopePath
              ? `Ask about ${noteName(scopePath)} and the notes it links to. ` +
                `${personaName} answers from them alone, citing passages.`
              : `Ask anything about your notes. ${personaName} answers, citing passages.`}
          </p>
          {scopePath ? null : <SuggestedQuestions onAsk={onAsk} disabled={!!live} />}
        </div>
      ) : null}
      {conversation?.messages.map((m) =>
        m.role === MessageRole.USER ? (
          <div key={m.id} className="message user">
            {m.content}
          </div>
        ) : (
          <StoredAnswer key={m.id} message={m} onCite={onCite} />
        ),
      )}
      {live ? (
        <>
          <div className="message user">{live.question}</div>
          <Answer
            text={live.text}
            sources={live.sources}
            streaming={!live.error && !live.stopped}
            error={live.error}
            stopped={live.stopped}
            agent={live.agent}
            onCite={onCite}
          />
        </>
      ) : null}
      <TurnStatus live={live} busy={busy} />
      <div ref={bottom} />
    </div>
  );
}
