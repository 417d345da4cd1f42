// Note-level search with folder and tag filters; each hit's snippet shows the matched words highlighted.
import { lazy, Suspense, useState } from "react";
import { describeError, retrieve } from "../api";
import { DateChip } from "../DateChip";
import { type NoteHit, SearchMode } from "../gen/secondbrain/retrieve/v1/retrieve_service_pb";

// The arms in the CLI's words; the proto keeps names of its own (SEARCH_MODES in services/retrieve/servicer.py).
const MODES: [SearchMode, string][] = [
  [SearchMode.HYBRID, "Hybrid (lexical and vector)"],
  [SearchMode.KEYWORD, "Lexical"],
  [SearchMode.SEMANTIC, "Vector"],
];

// The markdown renderer comes with the first results: its loading starts with the first search, so the hits are
// usually shown rendered, their words marked, rather than as plain text marked a moment later. Should it fail to
// load, the snippets stay plain text.
const loadMarkdown = () => import("../Markdown");
const PlainSnippet = ({ text }: { text: string }) => <>{text}</>;
const Snippet = lazy(() =>
  loadMarkdown().then(
    (module) => ({ default: module.Snippet }),
    () => ({ default: PlainSnippet }),
  ),
);


function list(text: string): string[] {
  return text
    .split(",")
    .map((part) => part.trim().replace(/^#/, ""))
    .filter(Boolean);
}

function summary(hits: NoteHit[], searched: string): string {
  const containing = hits.filter((hit) => hit.containsQuery).length;
  const related = hits.length - containing;
  if (!containing) return `No note contains “${searched}”; these are related by meaning:`;
  const notes = containing === 1 ? "1 note contains" : `${containing} notes contain`;
  return `${notes} “${searched}”` + (related ? `; ${related} more related by meaning.` : ".");
}

export function SearchPage() {
  const [query, setQuery] = useState("");
  const [folders, setFolders] = useState("");
  const [tags, setTags] = useState("");
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  const [mode, setMode] = useState(SearchMode.HYBRID);
  const [hits, setHits] = useState<NoteHit[]>();
  // The query the hits are for (the box may have changed since).
  const [searched, setSearched] = useState("");
  const [note, setNote] = useState("");
  const [error, setError] = useState("");
  const [searching, setSearching] = useState(false);

  async function search(event: React.FormEvent) {
    event.preventDefault();
    if (!query.trim()) return;
    setSearching(true);
    setError("");
    try {
      void loadMarkdown().catch(() => undefined); // started beside the search, not waited for
      const reply = await retrieve.search({
        query,
        mode,
        limit: 20,
        filters: { folders: list(folders), tags: list(tags), dateFrom: since, dateTo: until },
      });
      setHits(reply.hits);
      setSearched(query.trim());
      setNote(reply.vectorArmRan || mode === SearchMode.KEYWORD ? "" : `Vector search did not run: ${reply.vectorArmSkippedReason}`);
    } catch (e) {
      setError(describeError(e));
    } finally {
      setSearching(false);
    }
  }

  return (
    <section className="page search-page">
      <h1>Search your notes</h1>
      <form className="search-form" onSubmit={search} role="search">
        <input
          aria-label="Search"
          type="search"
          placeholder="Search…"
          value={query}
          onChange={(e) => setQuery(e.target.value)}
        />
        <select aria-label="Search mode" value={mode} onChange={(e) => setMode(Number(e.target.value))}>
          {MODES.map(([value, name]) => (
            <option key={value} value={value}>
              {name}
            </option>
          ))}
        </select>
        <input
          aria-label="Folders"
          placeholder="Folders, comma-separated"
          value={folders}
          onChange={(e) => setFolders(e.target.value)}
        />
        <input aria-label="Tags" placeholder="Tags, comma-separated" value={tags} onChange={(e) => setTags(e.target.value)} />
        <label className="date-field">
          From
          <input aria-label="Dated from" type="date" value={since} max={until || undefined} onChange={(e) => setSince(e.target.value)} />
        </label>
        <label className="date-field">
          to
          <input aria-label="Dated to" type="date" value={until} min={since || undefined} onChange={(e) => setUntil(e.target.value)} />
        </label>
        <button type="submit" className="primary" disabled={searching}>
          Search
        </button>
      </form>
      {error ? (
        <div className="error" role="alert">
          {error}
        </div>
      ) : null}
      {note ? <p className="muted">{note}</p> : null}
      {hits?.length ? (
        // What the list is: the notes that hold the words, and those listed for their meaning alone (the vector arm
        // always has neighbours, so a list of those is not a match).
        <p className="muted" data-testid="summary">
          {summary(hits, searched)}
        </p>
      ) : null}
      {hits ? (
        hits.length ? (
          <ol className="hits">
            {hits.map((hit) => (
              <li key={hit.path} data-testid="hit">
                <div className="hit-title">
                  <strong>{hit.title}</strong> <span className="note-path">{hit.path}</span>
                  <DateChip date={hit.date} source={hit.dateSource} shownIn={[hit.path, hit.title, ...hit.headingPath]} />
                  {hits.some((other) => other.containsQuery) && !hit.containsQuery ? (
                    <span className="related-chip" title="Listed for its meaning: it does not contain the words">
                      related
                    </span>
                  ) : null}
                </div>
                {hit.headingPath.length ? <div className="heading-path">{hit.headingPath.join(" › ")}</div> : null}
                <div className="snippet md">
                  <Suspense fallback={hit.snippet}>
                    <Snippet text={hit.snippet} highlights={hit.highlights} />
                  </Suspense>
                </div>
                {hit.tags.length ? <div className="tags">{hit.tags.map((t) => `#${t}`).join(" ")}</div> : null}
              </li>
            ))}
          </ol>
        ) : (
          <p className="muted">
            {mode === SearchMode.KEYWORD
              ? "No notes match."
              : `No note contains “${searched}”, and none is close to it in meaning.`}
          </p>
        )
      ) : null}
    </section>
  );
}
