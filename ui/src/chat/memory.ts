// What the chat keeps in this browser: the conversation the person was last in (so /chat returns to it), and the
// note a conversation is scoped to ("Ask about this note"), per conversation. Only ids and note paths, never a
// question or an answer.
const LAST_KEY = "secondbrain.chat.lastConversation";
const SCOPE_PREFIX = "secondbrain.chat.about.";

function safely<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback; // storage refused (a private window's quota, a policy): the chat works, it just forgets
  }
}

export function lastConversation(): string | undefined {
  return safely(() => localStorage.getItem(LAST_KEY) ?? undefined, undefined);
}

export function rememberConversation(id: string | undefined): void {
  safely(() => (id ? localStorage.setItem(LAST_KEY, id) : localStorage.removeItem(LAST_KEY)), undefined);
}

export function scopeOf(conversationId: string): string | undefined {
  return safely(() => localStorage.getItem(SCOPE_PREFIX + conversationId) ?? undefined, undefined);
}

export function rememberScope(conversationId: string, notePath: string | undefined): void {
  safely(
    () =>
      notePath
        ? localStorage.setItem(SCOPE_PREFIX + conversationId, notePath)
        : localStorage.removeItem(SCOPE_PREFIX + conversationId),
    undefined,
  );
}

// A deleted conversation leaves nothing behind.
export function forgetConversation(conversationId: string): void {
  rememberScope(conversationId, undefined);
  if (lastConversation() === conversationId) rememberConversation(undefined);
}
