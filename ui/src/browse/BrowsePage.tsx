// Browsing without typing, at /browse: the folder tree, the tag tree and the dates, each with counts, beside the
// notes they select (?folder=, ?tag=, ?from=&to=; with none, the latest notes). Each note opens in the reader.
import { useEffect, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { describeError, isUnauthenticated, retrieve } from "../api";
import { DateChip } from "../DateChip";
import { dateWords } from "../dates";
import {
  type GetFacetsResponse,
  ListOrder,
  type ListNotesResponse,
} from "../gen/secondbrain/retrieve/v1/retrieve_service_pb";
import { browseUrl, noteUrl } from "../routes";
import { DateBrowser } from "./DateBrowser";
import { FacetTree } from "./FacetTree";
import "./browse.css";

const LIST_LIMIT = 200;

function heading(folder: string, tag: string, from: string, to: string): string {
  const parts: string[] = [];
  if (folder) parts.push(`in ${folder}`);
  if (tag) parts.push(`tagged #${tag}`);
  if (from || to) {
    if (from && from === to) parts.push(`from ${dateWords(from)}`);
    else if (from && to) parts.push(`from ${dateWords(from)} to ${dateWords(to)}`);
    else parts.push(from ? `from ${dateWords(from)} on` : `up to ${dateWords(to)}`);
  }
  return parts.length ? `Notes ${parts.join(", ")}` : "Latest notes";
}

// Side by side (a wide screen) every section is open; on a phone, above the list, only the one that holds what is
// shown (a folder, a tag, dates), so the notes are not pushed off the screen.
const WIDE = "(min-width: 861px)";

function Section({ id, title, holds, children }: { id: string; title: string; holds: boolean; children: React.ReactNode }) {
  const [wide] = useState(() => window.matchMedia(WIDE).matches);
  const [open, setOpen] = useState(holds);
  useEffect(() => {
    if (holds) setOpen(true);
  }, [holds]);
  const shown = wide || open;
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>
        {wide ? (
          title
        ) : (
          <button type="button" className="section-toggle" aria-expanded={open} onClick={() => setOpen(!open)}>
            {title}
            <span aria-hidden="true">{open ? "▾" : "▸"}</span>
          </button>
        )}
      </h2>
      {shown ? children : null}
    </section>
  );
}

export function BrowsePage({ onUnauthenticated }: { onUnauthenticated: () => void }) {
  const [params] = useSearchParams();
  const folder = params.get("folder") ?? "";
  const tag = params.get("tag") ?? "";
  const from = params.get("from") ?? "";
  const to = params.get("to") ?? "";
  const [facets, setFacets] = useState<GetFacetsResponse>();
  const [notes, setNotes] = useState<ListNotesResponse>();
  const [error, setError] = useState("");
  const [facetError, setFacetError] = useState("");

  useEffect(() => {
    retrieve.getFacets({}).then(setFacets, (e) => {
      if (isUnauthenticated(e)) onUnauthenticated();
      setFacetError(describeError(e));
    });
  }, [onUnauthenticated]);

  useEffect(() => {
    let live = true;
    setNotes(undefined);
    setError("");
    const dated = Boolean(from || to) || !(folder || tag);
    retrieve
      .listNotes({
        filters: { folders: folder ? [folder] : [], tags: tag ? [tag] : [], dateFrom: from, dateTo: to },
        limit: LIST_LIMIT,
        order: dated ? ListOrder.NEWEST : ListOrder.PATH,
      })
      .then(
        (reply) => live && setNotes(reply),
        (e) => {
          if (!live) return;
          if (isUnauthenticated(e)) onUnauthenticated();
          setError(describeError(e));
        },
      );
    return () => {
      live = false;
    };
  }, [folder, tag, from, to, onUnauthenticated]);

  const title = heading(folder, tag, from, to);
  useEffect(() => {
    document.title = `${title} · secondbrain`;
  }, [title]);
  const filtered = Boolean(folder || tag || from || to);

  return (
    <div className="browse-layout">
      <nav className="browse-side" aria-label="Browse by">
        {facetError ? (
          <div className="error small" role="alert">
            {facetError}
          </div>
        ) : null}
        <Section id="folders-title" title="Folders" holds={Boolean(folder)}>
          {facets ? (
            facets.folders.length ? (
              <FacetTree
                items={facets.folders}
                selected={folder}
                hrefOf={(value) => browseUrl({ folder: value })}
                label="Folders"
              />
            ) : (
              <p className="muted small">Every note is at the top of the vault.</p>
            )
          ) : null}
        </Section>
        <Section id="tags-title" title="Tags" holds={Boolean(tag)}>
          {facets ? (
            facets.tags.length ? (
              <FacetTree
                items={facets.tags}
                selected={tag}
                hrefOf={(value) => browseUrl({ tag: value })}
                prefix="#"
                label="Tags"
              />
            ) : (
              <p className="muted small">No note has a tag.</p>
            )
          ) : null}
        </Section>
        <Section id="dates-title" title="Dates" holds={Boolean(from || to)}>
          {facets ? <DateBrowser days={facets.days} from={from} to={to} undated={facets.undatedNotes} /> : null}
        </Section>
      </nav>
      <section className="page browse-page" aria-labelledby="browse-title">
        <h1 id="browse-title">{title}</h1>
        {filtered ? (
          <p className="small">
            <Link to={browseUrl()}>Show the latest notes</Link>
          </p>
        ) : null}
        {error ? (
          <div className="error" role="alert">
            {error}
          </div>
        ) : null}
        {notes ? (
          <>
            <p className="muted" data-testid="browse-count" role="status">
              {notes.total === 0
                ? "No note matches."
                : notes.total > notes.notes.length
                  ? `${notes.total} notes; the first ${notes.notes.length} are listed.`
                  : `${notes.total} note${notes.total === 1 ? "" : "s"}`}
            </p>
            <ul className="note-list">
              {notes.notes.map((note) => (
                <li key={note.path} data-testid="listed-note">
                  <Link to={noteUrl(note.path)} className="note-title">
                    {note.title}
                  </Link>{" "}
                  <span className="note-path">{note.path}</span>{" "}
                  <DateChip date={note.date} source={note.dateSource} shownIn={[note.path, note.title]} />
                  {note.tags.length ? (
                    <div className="tags small">
                      {note.tags.map((t) => (
                        <Link key={t} className="tag-link" to={browseUrl({ tag: t })}>
                          #{t}
                        </Link>
                      ))}
                    </div>
                  ) : null}
                </li>
              ))}
            </ul>
          </>
        ) : error ? null : (
          <p className="muted" aria-busy="true">
            Loading…
          </p>
        )}
      </section>
    </div>
  );
}
