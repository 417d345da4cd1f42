// Note-level search with folder, tag and date filters picked from what the vault has; each hit's snippet shows the
// matched words highlighted, and its title opens the note in the reader. Filters without words list the notes they
// select, newest first by the notes' own dates. The search is the URL (?q=&folder=&tag=&from=&to=&mode=), so back
// from a note returns to the same results; a filter applies as soon as it is picked, and what is listed is always
// the answer to the URL as it is now (an answer to an earlier one is dropped; nothing asked, nothing listed).
import { lazy, Suspense, useEffect, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { describeError, retrieve } from "../api";
import { DateChip } from "../DateChip";
import { dateWords } from "../dates";
import {
  type GetFacetsResponse,
  ListOrder,
  type NoteHit,
  type NoteSummary,
  SearchMode,
} from "../gen/secondbrain/retrieve/v1/retrieve_service_pb";
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
  // Types of file (note, pdf, image, ...), as RetrievalFilters.file_types names them.
  types: string[];
  since: string;
  until: string;
  mode: SearchMode;
}

function askedFrom(params: URLSearchParams): Asked {
  return {
    query: params.get("q") ?? "",
    folders: params.getAll("folder"),
    tags: params.getAll("tag"),
    types: params.getAll("type"),
    since: params.get("from") ?? "",
    until: params.get("to") ?? "",
    mode: MODE_NAMES[params.get("mode") ?? ""] ?? SearchMode.HYBRID,
  };
}

// The most notes filters alone list.
const LISTED = 50;

function hasFilters(asked: Asked): boolean {
  return asked.folders.length + asked.tags.length + asked.types.length > 0 || !!asked.since || !!asked.until;
}

function paramsOf(asked: Asked): URLSearchParams {
  const params = new URLSearchParams();
  if (asked.query.trim() || !hasFilters(asked)) params.set("q", asked.query.trim());
  for (const folder of asked.folders) params.append("folder", folder);
  for (const tag of asked.tags) params.append("tag", tag);
  for (const type of asked.types) params.append("type", type);
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

// What filters alone select, in words: "dated 1 Jan 2026 to 31 Jan 2026, in Projects, tagged #garden".
function filtersInWords(asked: Asked): string {
  const parts: string[] = [];
  if (asked.since && asked.until) parts.push(`dated ${dateWords(asked.since)} to ${dateWords(asked.until)}`);
  else if (asked.since) parts.push(`dated from ${dateWords(asked.since)}`);
  else if (asked.until) parts.push(`dated up to ${dateWords(asked.until)}`);
  if (asked.folders.length) parts.push(`in ${asked.folders.join(" or ")}`);
  if (asked.tags.length) parts.push(`tagged ${asked.tags.map((tag) => `#${tag}`).join(" or ")}`);
  if (asked.types.length) parts.push(`of type ${asked.types.join(" or ")}`);
  return parts.join(", ");
}

function listSummary(listed: Listed): string {
  const { notes, total, asked } = listed;
  const which = filtersInWords(asked);
  if (!total) return `No note is ${which}.`;
  const count = total === 1 ? "1 note is" : `${total} notes are`;
  const shown = notes.length < total ? ` The newest ${notes.length}:` : "";
  return `${count} ${which}, newest first.${shown}`;
}

// A search's answer, or a list's, with the URL it answers (a later URL's page shows neither).
interface Found {
  key: string;
  kind: "search";
  hits: NoteHit[];
  searched: string;
  mode: SearchMode;
  // Why the vector arm did not run, when it was asked for.
  note: string;
}
interface Listed {
  key: string;
  kind: "list";
  notes: NoteSummary[];
  total: number;
  asked: Asked;
}

export function SearchPage() {
  const [params, setParams] = useSearchParams();
  const asked = askedFrom(params);
  const [query, setQuery] = useState(asked.query);
  const [folders, setFolders] = useState(asked.folders);
  const [tags, setTags] = useState(asked.tags);
  const [types, setTypes] = useState(asked.types);
  const [since, setSince] = useState(asked.since);
  const [until, setUntil] = useState(asked.until);
  const [mode, setMode] = useState(asked.mode);
  const [facets, setFacets] = useState<GetFacetsResponse>();
  const [answer, setAnswer] = useState<Found | Listed>();
  const [failure, setFailure] = useState<{ key: string; message: string }>();
  const key = params.toString();
  // Only what answers the URL as it is now is shown: an answer to an earlier URL is never on the page.
  const shown = answer?.key === key ? answer : undefined;
  const error = failure?.key === key ? failure.message : "";
  const asking = hasFilters(asked) || !!asked.query.trim();
  const searching = asking && !shown && !error;
  // On a phone the mode and filters fold behind a button (open when the search has filters); on a wide screen
  // they are always shown.
  const activeFilters = folders.length + tags.length + types.length + (since ? 1 : 0) + (until ? 1 : 0);
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
    setTypes(current.types);
    setSince(current.since);
    setUntil(current.until);
    setMode(current.mode);
    setAnswer(undefined);
    setFailure(undefined);
    if (!current.query.trim() && !hasFilters(current)) return; // nothing asked: nothing listed
    let live = true;
    const filters = {
      folders: current.folders,
      tags: current.tags,
      fileTypes: current.types,
      dateFrom: current.since,
      dateTo: current.until,
    };
    const failed = (e: unknown) => live && setFailure({ key, message: describeError(e) });
    if (!current.query.trim()) {
      // Filters alone: the notes they select.
      retrieve.listNotes({ filters, limit: LISTED, order: ListOrder.OWN_DATE }).then((reply) => {
        if (live) setAnswer({ key, kind: "list", notes: reply.notes, total: reply.total, asked: current });
      }, failed);
    } else {
      void loadMarkdown().catch(() => undefined); // started beside the search, not waited for
      retrieve.search({ query: current.query, mode: current.mode, limit: 20, filters }).then((reply) => {
        if (!live) return;
        const note =
          reply.vectorArmRan || current.mode === SearchMode.KEYWORD
            ? ""
            : `Vector search did not run: ${reply.vectorArmSkippedReason}`;
        setAnswer({ key, kind: "search", hits: reply.hits, searched: current.query.trim(), mode: current.mode, note });
      }, failed);
    }
    return () => {
      live = false;
    };
  }, [key, again]);

  // The form as it is now, as the URL. The same search again runs again (the index may have changed); a new one is
  // a new entry in the history, or takes the place of the current one (`replace`: a day being typed).
  function apply(changed: Partial<Asked>, replace = false) {
    const next = paramsOf({ query, folders, tags, types, since, until, mode, ...changed });
    if (next.toString() === key) setAgain(again + 1);
    else setParams(next, { replace });
  }

  function search(event: React.FormEvent) {
    event.preventDefault();
    apply({});
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
          <select
            aria-label="Search mode"
            value={mode}
            onChange={(e) => {
              setMode(Number(e.target.value));
              if (query.trim()) apply({ mode: Number(e.target.value) }); // filters alone are not ranked
            }}
          >
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
            onChange={(chosen) => apply({ folders: chosen })}
          />
          <FilterPicker
            label="Tags"
            placeholder="Any tag"
            prefix="#"
            options={facets?.tags ?? []}
            loaded={facets !== undefined}
            selected={tags}
            onChange={(chosen) => apply({ tags: chosen })}
          />
          {(facets?.fileTypes.length ?? 0) > 1 || types.length ? (
            // Only for a vault with more than notes: PDFs, pictures, canvases, Office files.
            <FilterPicker
              label="Types"
              placeholder="Any type of file"
              options={facets?.fileTypes ?? []}
              loaded={facets !== undefined}
              selected={types}
              onChange={(chosen) => apply({ types: chosen })}
            />
          ) : null}
          <label className="date-field">
            From
            <input
              aria-label="Dated from"
              type="date"
              value={since}
              max={until || undefined}
              onChange={(e) => {
                setSince(e.target.value);
                apply({ since: e.target.value }, true);
              }}
            />
          </label>
          <label className="date-field">
            to
            <input
              aria-label="Dated to"
              type="date"
              value={until}
              min={since || undefined}
              onChange={(e) => {
                setUntil(e.target.value);
                apply({ until: e.target.value }, true);
              }}
            />
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
      {searching ? (
        <p className="muted" role="status">
          {asked.query.trim() ? "Searching…" : "Listing…"}
        </p>
      ) : null}
      {shown?.kind === "search" ? <SearchHits found={shown} /> : null}
      {shown?.kind === "list" ? <NoteList listed={shown} /> : null}
    </section>
  );
}

// A hit's day is its section's (within the range asked), not the note's: a note dated in March found for its
// January entry is of January. A section dated by its heading needs no chip: the heading beside it says the day.
function HitDate({ hit }: { hit: NoteHit }) {
  const [date, source] = hit.sectionDate ? [hit.sectionDate, hit.sectionDateSource] : [hit.date, hit.dateSource];
  if (source === "heading") return null;
  return <DateChip date={date} source={source} shownIn={[hit.path, hit.title, ...hit.headingPath]} />;
}

function SearchHits({ found }: { found: Found }) {
  const { hits, searched, note } = found;
  const holding = hits.some((other) => other.containsQuery);
  return (
    <>
      {note ? <p className="muted">{note}</p> : null}
      {hits.length ? (
        // What the list is: the notes that hold the words, and those listed for their meaning alone (the vector arm
        // always has neighbours, so a list of those is not a match).
        <p className="muted" data-testid="summary">
          {summary(hits, searched)}
        </p>
      ) : null}
      {hits.length ? (
        <ol className="hits">
          {hits.map((hit) => (
            <li key={hit.path} data-testid="hit">
              <div className="hit-title">
                <Link className="hit-link" to={noteUrl(hit.path, { heading: hit.headingPath.at(-1) })}>
                  {hit.title}
                </Link>{" "}
                <span className="note-path">{hit.path}</span>
                <HitDate hit={hit} />
                {holding && !hit.containsQuery ? (
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
          {found.mode === SearchMode.KEYWORD
            ? "No notes match."
            : `No note contains “${searched}”, and none is close to it in meaning.`}
        </p>
      )}
    </>
  );
}

// Whether a note's days ("2026-01-20", "2026-01-19..2026-01-25") meet the range asked: a note dated 1 March is
// listed under January for a January entry, and its chip would say a day the range did not ask for.
function meets(date: string, asked: Asked): boolean {
  const [start, end = start] = date.split("..");
  return (!asked.since || end >= asked.since) && (!asked.until || start <= asked.until);
}

// The notes filters alone select: each note's title (opening it), path, own date (when it is of the range asked)
// and tags.
function NoteList({ listed }: { listed: Listed }) {
  return (
    <>
      <p className="muted" data-testid="summary">
        {listSummary(listed)}
      </p>
      {listed.notes.length ? (
        <ol className="hits">
          {listed.notes.map((note) => (
            <li key={note.path} data-testid="hit">
              <div className="hit-title">
                <Link className="hit-link" to={noteUrl(note.path)}>
                  {note.title}
                </Link>{" "}
                <span className="note-path">{note.path}</span>
                {meets(note.date, listed.asked) ? (
                  <DateChip date={note.date} source={note.dateSource} shownIn={[note.path, note.title]} />
                ) : null}
              </div>
              {note.tags.length ? <div className="tags">{note.tags.map((t) => `#${t}`).join(" ")}</div> : null}
            </li>
          ))}
        </ol>
      ) : null}
    </>
  );
}
