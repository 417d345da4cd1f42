// The UI's addresses: every place a person can be has a real URL (a reload, a shared link, back and forward all
// work), and this is the one place that writes them. The gateway answers each of these paths with index.html.
//
//   /                         search
//   /note/<path>              the reader; ?lines=12-18 highlights and scrolls to those lines, #<heading> to a heading
//   /browse                   folders, tags and dates; ?folder=Projects, ?tag=garden, ?from=2026-01-01&to=2026-01-31
//   /chat                     the chat, a new conversation; ?about=<path> scopes it to that note and its links
//   /chat/<id>                one conversation
//   /status                   the index
//
// Paths are encoded segment by segment, so a note's own '/' stays a '/' and its '#', '?' and '%' are escaped.

export const APP_PREFIXES = ["/note/", "/browse", "/chat", "/status"];

function encodePath(path: string): string {
  return path.split("/").map(encodeURIComponent).join("/");
}

export function noteUrl(path: string, where: { lines?: [number, number]; heading?: string } = {}): string {
  const query = where.lines ? `?lines=${where.lines[0]}-${where.lines[1]}` : "";
  const hash = where.heading ? `#${encodeURIComponent(where.heading)}` : "";
  return `/note/${encodePath(path)}${query}${hash}`;
}

export function browseUrl(by: { folder?: string; tag?: string; from?: string; to?: string } = {}): string {
  const query = new URLSearchParams();
  if (by.folder) query.set("folder", by.folder);
  if (by.tag) query.set("tag", by.tag);
  if (by.from) query.set("from", by.from);
  if (by.to) query.set("to", by.to);
  const text = query.toString();
  return text ? `/browse?${text}` : "/browse";
}

export function tagUrl(tag: string): string {
  return browseUrl({ tag: tag.replace(/^#/, "") });
}

export function chatUrl(conversationId?: string, about?: string): string {
  const base = conversationId ? `/chat/${encodeURIComponent(conversationId)}` : "/chat";
  return about ? `${base}?about=${encodeURIComponent(about)}` : base;
}

export const statusUrl = "/status";

// The note in Obsidian: obsidian://open takes the vault's name (its folder's name) and the note's path without .md.
export function obsidianUrl(vaultName: string, notePath: string): string {
  const file = notePath.replace(/\.md$/i, "");
  return `obsidian://open?vault=${encodeURIComponent(vaultName)}&file=${encodeURIComponent(file)}`;
}

// The note path of a /note/... pathname (react-router gives the splat still encoded per segment).
export function notePathFrom(splat: string): string {
  return splat.split("/").map(decodeURIComponent).join("/");
}

// "12-18" -> [12, 18]; anything else -> undefined.
export function parseLines(text: string | null): [number, number] | undefined {
  const match = /^(\d+)(?:-(\d+))?$/.exec(text ?? "");
  if (!match) return undefined;
  const start = Number(match[1]);
  const end = Number(match[2] ?? match[1]);
  return start >= 1 && end >= start ? [start, end] : undefined;
}
