// The conversation the address names. /chat/<id> is that conversation, read from the service (unless it is the one
// a first question has just made); /chat is the conversation you were last in, or a new one when there is none (or
// when "+ New conversation" says so in the history entry's state); /chat?about=<path> is a new one scoped to that
// note. The id is remembered in this browser as you move, and so is each conversation's scope.
import { Code, ConnectError } from "@connectrpc/connect";
import { useEffect, useRef, useState } from "react";
import { useLocation, useNavigate, useParams, useSearchParams } from "react-router";
import { chat } from "../api";
import type { Conversation } from "../gen/secondbrain/chat/v1/chat_service_pb";
import { chatUrl } from "../routes";
import { forgetConversation, lastConversation, rememberConversation, scopeOf } from "./memory";
import { notesInScope } from "./scope";

const GONE =
  "This conversation is not there any more (deleted, perhaps from another device). Start a new one, or pick one " +
  "from the list.";

// `onMove`: the address now names another conversation (`fresh`: a new one).
export function useRoutedConversation(fail: (error: unknown) => void, onMove: (fresh: boolean) => void) {
  const { conversationId: routeId } = useParams();
  const about = useSearchParams()[0].get("about") || undefined;
  const location = useLocation();
  const fresh = !!(location.state as { fresh?: boolean } | null)?.fresh;
  const navigate = useNavigate();
  const [active, setActive] = useState<Conversation>();
  const [missing, setMissing] = useState<string>();
  const [scopePath, setScopePath] = useState<string>();
  const [linked, setLinked] = useState<number>();
  const activeRef = useRef(active);
  activeRef.current = active;
  const routeRef = useRef(routeId);
  routeRef.current = routeId;
  const moved = useRef(onMove);
  moved.current = onMove;

  const returnTo = !routeId && !about && !fresh ? lastConversation() : undefined;
  useEffect(() => {
    if (returnTo) navigate(chatUrl(returnTo), { replace: true });
  }, [returnTo, navigate]);

  useEffect(() => {
    setMissing(undefined);
    if (!routeId) {
      if (returnTo) return;
      rememberConversation(undefined); // /chat opens a new conversation until this one has a question
      activeRef.current = undefined;
      setActive(undefined);
      setScopePath(about);
      moved.current(true);
      return;
    }
    rememberConversation(routeId);
    setScopePath(scopeOf(routeId));
    moved.current(false);
    if (activeRef.current?.id === routeId) return; // made just now by its first question
    let current = true;
    chat
      .getConversation({ id: routeId })
      .then((reply) => current && setActive(reply.conversation))
      .catch((e: unknown) => {
        if (!current) return;
        setActive(undefined);
        if (e instanceof ConnectError && e.code === Code.NotFound) {
          forgetConversation(routeId);
          setMissing(GONE);
        } else fail(e);
      });
    return () => {
      current = false;
    };
    // location.key: "+ New conversation" while already in a new one starts afresh.
  }, [routeId, about, returnTo, location.key, fail]);

  // How many notes the scope's note links to, for its chip.
  useEffect(() => {
    setLinked(undefined);
    if (!scopePath) return;
    let current = true;
    notesInScope(scopePath)
      .then((notes) => current && setLinked(notes.length - 1))
      .catch(fail);
    return () => {
      current = false;
    };
  }, [scopePath, fail]);

  return { routeId, about, returnTo, active, setActive, activeRef, routeRef, missing, scopePath, setScopePath, linked };
}
