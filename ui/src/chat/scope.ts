// "Ask about this note": a conversation scoped to one note and the notes it links to. Every question of it is sent
// with RetrievalFilters.notes = [the note, ...its outgoing links' notes], read from GetNoteLinks at each question,
// so a link added to the note since is followed too.
import { retrieve } from "../api";

// "Home/Kitchen Renovation.md" -> "Kitchen Renovation".
export function noteName(path: string): string {
  return (path.split("/").pop() ?? path).replace(/\.md$/i, "");
}

export async function notesInScope(path: string): Promise<string[]> {
  const links = await retrieve.getNoteLinks({ path });
  // A link naming no indexed note has no path, and a note may link to another several times.
  return [...new Set([links.path || path, ...links.outgoing.map((link) => link.path).filter(Boolean)])];
}
