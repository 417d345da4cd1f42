// Reading a note for the reader: its whole text and its links. A note opened by its address (a reload, a shared
// link, a phone opening the app there) is read while the reader's script is still loading, not after it: the app
// starts the read at once (prefetchNote), and the reader takes it (takeNote). Anything else reads afresh.
import { retrieve } from "../api";
import type { GetNoteLinksResponse, GetNoteResponse } from "../gen/secondbrain/retrieve/v1/retrieve_service_pb";
import { notePathFrom } from "../routes";

export interface LoadedNote {
  note: GetNoteResponse;
  links: GetNoteLinksResponse;
}

// The whole note: GetNote returns at most 2,000 lines a read, so a longer one is read on from where it stopped.
async function readWhole(path: string): Promise<GetNoteResponse> {
  const first = await retrieve.getNote({ path });
  let text = first.text;
  let end = first.endLine;
  while (end < first.lastLine) {
    const more = await retrieve.getNote({ path: first.path, startLine: end + 1 });
    text += `\n${more.text}`;
    end = more.endLine;
  }
  first.text = text;
  first.endLine = end;
  return first;
}

function read(path: string): Promise<LoadedNote> {
  return Promise.all([readWhole(path), retrieve.getNoteLinks({ path })]).then(([note, links]) => ({ note, links }));
}

let prefetched: { path: string; loading: Promise<LoadedNote> } | undefined;

// At the app's start: the note the address names, if it names one.
export function prefetchNote(pathname: string): void {
  if (!pathname.startsWith("/note/")) return;
  const path = notePathFrom(pathname.slice("/note/".length));
  const loading = read(path);
  loading.catch(() => undefined); // the reader reports it when it takes it
  prefetched = { path, loading };
}

export function takeNote(path: string): Promise<LoadedNote> {
  const early = prefetched;
  prefetched = undefined;
  return early?.path === path ? early.loading : read(path);
}
