// The conversation list, newest first, or those that mention the words in the search box (ListConversations'
// query, asked a moment after the last keystroke, so typing a word is one request, not one a letter).
import { useCallback, useEffect, useRef, useState } from "react";
import { chat } from "../api";
import type { Conversation } from "../gen/secondbrain/chat/v1/chat_service_pb";

const TYPING_PAUSE_MS = 250;
const PAGE_SIZE = 100;

export function useConversationList(fail: (error: unknown) => void) {
  const [conversations, setConversations] = useState<Conversation[]>([]);
  const [query, setQuery] = useState("");
  // The query the list shows the answer to ("" for all), once that answer is in.
  const [shownQuery, setShownQuery] = useState<string>();
  const asked = useRef(0);

  const load = useCallback(
    async (words: string) => {
      const ticket = ++asked.current;
      try {
        const reply = await chat.listConversations({ pageSize: PAGE_SIZE, query: words });
        if (ticket !== asked.current) return; // a later search answered, or will
        setConversations(reply.conversations);
        setShownQuery(words);
      } catch (e) {
        if (ticket === asked.current) fail(e);
      }
    },
    [fail],
  );

  const words = query.trim();
  useEffect(() => {
    const timer = setTimeout(() => void load(words), words ? TYPING_PAUSE_MS : 0);
    return () => clearTimeout(timer);
  }, [words, load]);

  const refresh = useCallback(() => load(words), [load, words]);
  return { conversations, query, setQuery, shownQuery, searching: shownQuery !== words, refresh };
}
