// Time as the chat shows it: the asker's now sent with each question, and the day a conversation last changed.
import type { Conversation } from "../gen/secondbrain/chat/v1/chat_service_pb";

// The browser's clock in its own zone, ISO 8601 with the offset ("2026-11-30T18:00:00+01:00"): "yesterday" in a
// question is the asker's yesterday, wherever the server runs.
export function localNow(date = new Date()): string {
  const pad = (n: number) => String(Math.floor(Math.abs(n))).padStart(2, "0");
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}` +
    `T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}` +
    `${sign}${pad(offset / 60)}:${pad(offset % 60)}`
  );
}

// The day a conversation last changed: Today, Yesterday, a weekday this week, then a date, so look-alike titles are
// told apart by when they were (found by a user: a list of "What did we decide ab…").
function dayOf(conversation: Conversation): string {
  const seconds = Number(conversation.updateTime?.seconds ?? 0n);
  if (!seconds) return "Earlier";
  const when = new Date(seconds * 1000);
  const today = new Date();
  const days = Math.round(
    (new Date(today.getFullYear(), today.getMonth(), today.getDate()).getTime() -
      new Date(when.getFullYear(), when.getMonth(), when.getDate()).getTime()) /
      86_400_000,
  );
  if (days <= 0) return "Today";
  if (days === 1) return "Yesterday";
  if (days < 7) return when.toLocaleDateString(undefined, { weekday: "long" });
  const sameYear = when.getFullYear() === today.getFullYear();
  return when.toLocaleDateString(undefined, { day: "numeric", month: "long", year: sameYear ? undefined : "numeric" });
}

// The conversations (newest first) under the day each last changed.
export function byDay(conversations: Conversation[]): [string, Conversation[]][] {
  const groups: [string, Conversation[]][] = [];
  for (const conversation of conversations) {
    const day = dayOf(conversation);
    if (groups.length && groups[groups.length - 1][0] === day) groups[groups.length - 1][1].push(conversation);
    else groups.push([day, [conversation]]);
  }
  return groups;
}

export function lastChanged(conversation: Conversation): string {
  const seconds = Number(conversation.updateTime?.seconds ?? 0n);
  const count = `${conversation.messageCount} message${conversation.messageCount === 1 ? "" : "s"}`;
  return seconds ? `${count}, last ${new Date(seconds * 1000).toLocaleString()}` : count;
}
