// The conversations, on the left (a drawer below 700 px): a new one, a search over them all (their titles and
// messages, asked of ListConversations a moment after typing stops), and the list under the day each last changed.
import { type RefObject } from "react";
import type { Conversation } from "../gen/secondbrain/chat/v1/chat_service_pb";
import { type ConversationActions, ConversationItem } from "./ConversationItem";
import { byDay } from "./when";
import "./conversations.css";

function plural(count: number): string {
  return count === 1 ? "1 conversation mentions" : `${count} conversations mention`;
}

export function ConversationList({
  conversations,
  activeId,
  query,
  shownQuery,
  searching,
  searchBox,
  onQuery,
  onNew,
  ...actions
}: {
  conversations: Conversation[];
  activeId?: string;
  query: string;
  // The words the list is the answer to, once it is in (undefined before the first answer).
  shownQuery?: string;
  searching: boolean;
  searchBox: RefObject<HTMLInputElement | null>;
  onQuery: (query: string) => void;
  onNew: () => void;
} & ConversationActions) {
  return (
    <nav className="conversations" id="conversations" aria-label="Conversations">
      <button type="button" className="primary new" onClick={onNew}>
        + New conversation
      </button>
      <input
        ref={searchBox}
        type="search"
        className="conversation-search"
        aria-label="Search conversations"
        placeholder="Search conversations"
        value={query}
        onChange={(e) => onQuery(e.target.value)}
      />
      <p className={shownQuery && !conversations.length ? "no-match" : "visually-hidden"} role="status">
        {!shownQuery || searching
          ? ""
          : conversations.length
            ? `${plural(conversations.length)} “${shownQuery}”.`
            : `No conversation mentions “${shownQuery}”.`}
      </p>
      {shownQuery === "" && !conversations.length ? <p className="muted small">No conversations yet.</p> : null}
      {byDay(conversations).map(([day, group]) => (
        <section key={day} className="day" aria-label={day}>
          <h2>{day}</h2>
          <ul>
            {group.map((c) => (
              <ConversationItem key={c.id} conversation={c} active={c.id === activeId} {...actions} />
            ))}
          </ul>
        </section>
      ))}
    </nav>
  );
}
