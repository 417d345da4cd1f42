// Note-level search with folder, tag and date filters picked from what the vault has; each hit's snippet shows the
// matched words highlighted, and its title opens the note in the reader. The search is the URL (?q=&folder=&tag=
// &from=&to=&mode=), so back from a note returns to the same results.
import { lazy, Suspense, useEffect, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { describeError, retrieve } from "../api";
import { DateChip } from "../DateChip";
import { type GetFacetsResponse, type NoteHit, SearchMode } from "../gen/secondbrain/retrieve/v1/retrieve_service_pb";
import { noteUrl } from "../routes";
import { FilterPicker } from "./FilterPicker";

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

const MODE_NAMES: Record<string, SearchMode> = {
  hybrid: SearchMode.HYBRID,
  lexical: SearchMode.KEYWORD,
  vector: SearchMode.SEMANTIC,
};

function modeName(mode: SearchMode): string {
  return Object.entries(MODE_NAMES).find(([, value]) => value === mode)?.[0] ?? "hybrid";
}

interface Asked {
  query: string;
  folders: string[];
  tags: string[];
  since: string;
  until: string;
  mode: SearchMode;
}

function askedFrom(params: URLSearchParams): Asked {
  return {
    query: params.get("q") ?? "",
    folders: params.getAll("folder"),
    tags: params.getAll("tag"),
    since: params.get("from") ?? "",
    until: params.get("to") ?? "",
    mode: MODE_NAMES[params.get("mode") ?? ""] ?? SearchMode.HYBRID,
  };
}

function paramsOf(asked: Asked): URLSearchParams {
  const params = new URLSearchParams();
  params.set("q", asked.query.trim());
  for (const folder of asked.folders) params.append("folder", folder);
  for (const tag of asked.tags) params.append("tag", tag);
  if (asked.since) params.set("from", asked.since);
  if (asked.until) params.set("to", asked.until);
  if (asked.mode !== SearchMode.HYBRID) params.set("mode", modeName(asked.mode));
  return params;
}

function summary(hits: NoteHit[], searched: string): string {
  const containing = hits.filter((hit) => hit.containsQuery).length;
  const related = hits.length - containing;
  if (!containing) return `No note contains “${searched}”; these are related by meaning:`;
  const notes = containing === 1 ? "1 note contains" : `${containing} notes contain`;
  return `${notes} “${searched}”` + (related ? `; ${related} more related by meaning.` : ".");
}

export function SearchPage() {
  const [params, setParams] = useSearchParams();
  const asked = askedFrom(params);
  const [query, setQuery] = useState(asked.query);
  const [folders, setFolders] = useState(asked.folders);
  const [tags, setTags] = useState(asked.tags);
  const [since, setSince] = useState(asked.since);
  const [until, setUntil] = useState(asked.until);
  const [mode, setMode] = useState(asked.mode);
  const [facets, setFacets] = useState<GetFacetsResponse>();
  const [hits, setHits] = useState<NoteHit[]>();
  // The query the hits are for (the box may have changed since).
  const [searched, setSearched] = useState("");
  const [note, setNote] = useState("");
  const [error, setError] = useState("");
  const [searching, setSearching] = useState(false);
  const key = params.toString();
  // On a phone the mode and filters fold behind a button (open when the search has filters); on a wide screen
  // they are always shown.
  const activeFilters = folders.length + tags.length + (since ? 1 : 0) + (until ? 1 : 0);
  const [optionsOpen, setOptionsOpen] = useState(activeFilters > 0);
  // Bumped to run the same search again (the index may have changed since).
  const [again, setAgain] = useState(0);

  useEffect(() => {
    retrieve.getFacets({}).then(setFacets, () => undefined); // without them the pickers are empty; search still works
  }, []);

  // The URL is the search: run it whenever it changes (a search, back, forward, a shared link).
  useEffect(() => {
    const current = askedFrom(new URLSearchParams(key));
    setQuery(current.query);
    setFolders(current.folders);
    setTags(current.tags);
    setSince(current.since);
    setUntil(current.until);
    setMode(current.mode);
    if (!current.query.trim()) {
      setHits(undefined);
      return;
    }
    let live = true;
    setSearching(true);
    setError("");
    void loadMarkdown().catch(() => undefined); // started beside the search, not waited for
    retrieve
      .search({
        query: current.query,
        mode: current.mode,
        limit: 20,
        filters: { folders: current.folders, tags: current.tags, dateFrom: current.since, dateTo: current.until },
      })
      .then(
        (reply) => {
          if (!live) return;
          setHits(reply.hits);
          setSearched(current.query.trim());
          setNote(
            reply.vectorArmRan || current.mode === SearchMode.KEYWORD
              ? ""
              : `Vector search did not run: ${reply.vectorArmSkippedReason}`,
          );
        },
        (e) => live && setError(describeError(e)),
      )
      .finally(() => live && setSearching(false));
    return () => {
      live = false;
    };
  }, [key, again]);

  function search(event: React.FormEvent) {
    event.preventDefault();
    if (!query.trim()) return;
    const next = paramsOf({ query, folders, tags, since, until, mode });
    // The same search again runs again (the index may have changed); a new one is a new entry in the history.
    if (next.toString() === key) setAgain(again + 1);
    else setParams(next);
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
        <button
          type="button"
          className="options-toggle"
          aria-expanded={optionsOpen}
          aria-controls="search-options"
          onClick={() => setOptionsOpen(!optionsOpen)}
        >
          Filters{activeFilters ? ` (${activeFilters})` : ""}
        </button>
        <div id="search-options" className={`search-options${optionsOpen ? " open" : ""}`}>
          <select aria-label="Search mode" value={mode} onChange={(e) => setMode(Number(e.target.value))}>
            {MODES.map(([value, name]) => (
              <option key={value} value={value}>
                {name}
              </option>
            ))}
          </select>
          <FilterPicker
            label="Folders"
            placeholder="Any folder"
            options={facets?.folders ?? []}
            loaded={facets !== undefined}
            selected={folders}
            onChange={setFolders}
          />
          <FilterPicker
            label="Tags"
            placeholder="Any tag"
            prefix="#"
            options={facets?.tags ?? []}
            loaded={facets !== undefined}
            selected={tags}
            onChange={setTags}
          />
          <label className="date-field">
            From
            <input aria-label="Dated from" type="date" value={since} max={until || undefined} onChange={(e) => setSince(e.target.value)} />
          </label>
          <label className="date-field">
            to
            <input aria-label="Dated to" type="date" value={until} min={since || undefined} onChange={(e) => setUntil(e.target.value)} />
          </label>
        </div>
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
                  <Link
                    className="hit-link"
                    to={noteUrl(hit.path, { heading: hit.headingPath.at(-1) })}
                  >
                    {hit.title}
                  </Link>{" "}
                  <span className="note-path">{hit.path}</span>
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
