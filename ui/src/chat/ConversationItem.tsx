// One conversation in the list: its title (a link to it) with the first words of its first answer under it, and
// its Rename, Export and Delete buttons, always there (not only on hover), each named with the conversation's title
// so a screen reader hears which one. Renaming is in place: Enter keeps the title, Escape cancels, and focus goes
// back to the Rename button either way.
import { useRef, useState } from "react";
import { Link } from "react-router";
import type { Conversation } from "../gen/secondbrain/chat/v1/chat_service_pb";
import { chatUrl } from "../routes";
import { Icon } from "./icons";
import { lastChanged } from "./when";

export interface ConversationActions {
  onOpen: (conversation: Conversation) => void;
  onRename: (conversation: Conversation, title: string) => void;
  onExport: (conversation: Conversation) => void;
  onDelete: (conversation: Conversation) => void;
}

export function ConversationItem({
  conversation,
  active,
  onOpen,
  onRename,
  onExport,
  onDelete,
}: { conversation: Conversation; active: boolean } & ConversationActions) {
  const [renaming, setRenaming] = useState(false);
  const renameButton = useRef<HTMLButtonElement>(null);
  // Enter ends the rename and unmounting the field blurs it: the title is kept once.
  const ended = useRef(false);
  const name = conversation.title || "Untitled";
  const previewId = `preview-${conversation.id}`;

  function start() {
    ended.current = false;
    setRenaming(true);
  }

  function end(title?: string) {
    if (ended.current) return;
    ended.current = true;
    setRenaming(false);
    if (title !== undefined && title.trim() && title !== conversation.title) onRename(conversation, title.trim());
    requestAnimationFrame(() => renameButton.current?.focus());
  }

  return (
    <li className={active ? "active" : undefined} title={lastChanged(conversation)}>
      {renaming ? (
        <input
          autoFocus
          aria-label={`New title for ${name}`}
          defaultValue={conversation.title}
          onBlur={(e) => end(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter") end(e.currentTarget.value);
            if (e.key === "Escape") {
              e.stopPropagation(); // cancels the rename only
              e.preventDefault();
              end();
            }
          }}
        />
      ) : (
        <Link
          className="title"
          to={chatUrl(conversation.id)}
          aria-current={active ? "page" : undefined}
          aria-label={name}
          aria-describedby={conversation.preview ? previewId : undefined}
          onClick={() => onOpen(conversation)}
        >
          <span className="name">{name}</span>
          {conversation.preview ? (
            <span className="preview" id={previewId}>
              {conversation.preview}
            </span>
          ) : null}
        </Link>
      )}
      <span className="item-actions">
        <button type="button" className="icon" ref={renameButton} aria-label={`Rename ${name}`} onClick={start}>
          <Icon name="rename" size={16} />
        </button>
        <button type="button" className="icon" aria-label={`Export ${name}`} onClick={() => onExport(conversation)}>
          <Icon name="export" size={16} />
        </button>
        <button type="button" className="icon" aria-label={`Delete ${name}`} onClick={() => onDelete(conversation)}>
          <Icon name="delete" size={16} />
        </button>
      </span>
    </li>
  );
}
