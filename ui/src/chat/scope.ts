// "Ask about this note": a conversation scoped to one note and the notes it links to. Every question of it is sent
// with RetrievalFilters.notes = [the note, ...its outgoing links' notes], read from GetNoteLinks at each question,
// so a link added to the note since is followed too.
import { retrieve } from "../api";

// The most notes a filter may name (the retrieve service's MAX_NOTE_FILTERS): a note linking to more (an index
// note, say) is asked about with the first links it makes.
export const MOST_NOTES = 200;


export async function notesInScope(path: string): Promise<string[]> {
  const links = await retrieve.getNoteLinks({ path });
  // A link naming no indexed note has no path, and a note may link to another several times.
  const notes = [...new Set([links.path || path, ...links.outgoing.map((link) => link.path).filter(Boolean)])];
  return notes.slice(0, MOST_NOTES);
}
