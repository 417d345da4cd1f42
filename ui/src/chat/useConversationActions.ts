// What can be done to a conversation from the list or its header: choose its persona, rename it, export it as a
// markdown note, delete it (after asking; deleting the one you are in opens a new one).
import type { RefObject } from "react";
import { useNavigate } from "react-router";
import { chat, isUnauthenticated } from "../api";
import type { Conversation } from "../gen/secondbrain/chat/v1/chat_service_pb";
import { chatUrl } from "../routes";
import { describeExportError, downloadConversation } from "./exporting";
import { forgetConversation } from "./memory";

export function useConversationActions({
  activeRef,
  setActive,
  refresh,
  fail,
  setError,
  onUnauthenticated,
  afterDelete,
}: {
  activeRef: RefObject<Conversation | undefined>;
  setActive: (conversation: Conversation | undefined) => void;
  refresh: () => Promise<void>;
  fail: (error: unknown) => void;
  setError: (message: string) => void;
  onUnauthenticated: () => void;
  afterDelete: () => void;
}) {
  const navigate = useNavigate();

  async function choosePersona(personaId: string) {
    const active = activeRef.current;
    if (!active) return;
    try {
      const reply = await chat.updateConversation({ id: active.id, personaId, updateMask: { paths: ["persona_id"] } });
      if (reply.conversation) setActive({ ...active, personaId: reply.conversation.personaId });
    } catch (e) {
      fail(e);
    }
  }

  async function rename(conversation: Conversation, title: string) {
    try {
      await chat.updateConversation({ id: conversation.id, title, updateMask: { paths: ["title"] } });
      const active = activeRef.current;
      if (active?.id === conversation.id) setActive({ ...active, title });
      await refresh();
    } catch (e) {
      fail(e);
    }
  }

  async function remove(conversation: Conversation) {
    if (!window.confirm(`Delete “${conversation.title || "Untitled"}” and its messages?`)) return;
    try {
      await chat.deleteConversation({ id: conversation.id });
      forgetConversation(conversation.id);
      const open = activeRef.current?.id === conversation.id;
      // The open one: a new conversation takes its place (and focus goes to its question field).
      if (open) navigate(chatUrl(), { replace: true, state: { fresh: true } });
      await refresh();
      if (!open) afterDelete();
    } catch (e) {
      fail(e);
    }
  }

  async function exportConversation(conversation: Conversation) {
    setError("");
    try {
      await downloadConversation(conversation.id);
    } catch (e) {
      if (isUnauthenticated(e)) onUnauthenticated();
      setError(describeExportError(e));
    }
  }

  return { choosePersona, rename, remove, exportConversation };
}
