// The note reader, at /note/<path>: the note as Obsidian shows it (properties, then the body), with its links,
// backlinks and related notes beside it. ?lines=a-b (a citation, a backlink) highlights those lines and scrolls to
// them; #heading scrolls to a heading. "Ask about this note" opens the chat scoped to it and what it links to.
import { useEffect, useLayoutEffect, useRef, useState } from "react";
import { Link, useLocation, useParams, useSearchParams } from "react-router";
import { describeError, isUnauthenticated } from "../api";
import { DateChip } from "../DateChip";
import { useIndexStatus, vaultName } from "../indexStatus";
import { browseUrl, chatUrl, notePathFrom, obsidianUrl, parseLines, tagUrl } from "../routes";
import { isAttachmentName } from "./attachments";
import { Backlinks, OutgoingLinks } from "./NoteLinks";
import { NoteMarkdown, resolvedLinks } from "./NoteMarkdown";
import { type LoadedNote, takeNote } from "./noteLoad";
import { slug } from "./obsidian";
import { Properties } from "./Properties";
import { OpenOriginal } from "./OpenOriginal";
import { RelatedNotes } from "./RelatedNotes";
import "./reader.css";


// The body without its own title (# Title as its first line, which the reader shows above the properties, as
// Obsidian shows a note's name), and the file line it then starts on.
function withoutTitle(text: string, title: string, firstLine: number): [string, number] {
  const lines = text.split("\n");
  let at = 0;
  while (at < lines.length && !lines[at].trim()) at += 1;
  const heading = /^#\s+(.+?)\s*#*\s*$/.exec(lines[at] ?? "");
  if (!heading || heading[1].trim() !== title.trim()) return [text, firstLine];
  at += 1;
  while (at < lines.length && !lines[at].trim()) at += 1;
  return [lines.slice(at).join("\n"), firstLine + at];
}

// The page a cited passage of an attachment is on: the "## Page N" heading its first line is under, in the text the
// index made of the PDF (a heading per page); undefined for a note, or when nothing is cited.
function citedPage(body: string, firstLine: number, cited?: [number, number]): number | undefined {
  if (!cited) return undefined;
  const lines = body.split("\n");
  let page: number | undefined;
  for (let at = 0; at < lines.length && firstLine + at <= cited[0]; at += 1) {
    const heading = /^## Page (\d+)(?::.*)?$/.exec(lines[at]);
    if (heading) page = Number(heading[1]);
  }
  return page;
}

function Breadcrumbs({ path }: { path: string }) {
  const folders = path.split("/").slice(0, -1);
  if (!folders.length) return null;
  return (
    <nav className="breadcrumbs" aria-label="Folder">
      {folders.map((name, i) => (
        <span key={i}>
          <Link to={browseUrl({ folder: folders.slice(0, i + 1).join("/") })}>{name}</Link>
          <span aria-hidden="true"> / </span>
        </span>
      ))}
    </nav>
  );
}

export function ReaderPage({ onUnauthenticated }: { onUnauthenticated: () => void }) {
  const params = useParams();
  const path = notePathFrom(params["*"] ?? "");
  const [search] = useSearchParams();
  const location = useLocation();
  const cited = parseLines(search.get("lines"));
  const heading = decodeURIComponent(location.hash.replace(/^#/, ""));
  const status = useIndexStatus();
  const [loaded, setLoaded] = useState<LoadedNote>();
  const [error, setError] = useState("");
  const article = useRef<HTMLElement>(null);

  useEffect(() => {
    let live = true;
    setError("");
    takeNote(path).then(
      (read) => {
        if (!live) return;
        setLoaded(read);
        document.title = `${read.note.title} · secondbrain`;
      },
      (e) => {
        if (!live) return;
        if (isUnauthenticated(e)) onUnauthenticated();
        setLoaded(undefined);
        setError(describeError(e));
      },
    );
    return () => {
      live = false;
    };
  }, [path, onUnauthenticated]);

  // A note opened is a page opened: focus goes to its title (a screen reader reads it), as a page load would put it.
  useEffect(() => {
    if (loaded) document.getElementById("note-title")?.focus({ preventScroll: true });
  }, [loaded?.note.path]);

  // Once the note is shown: to the cited lines, else the heading, else the top.
  useLayoutEffect(() => {
    if (!loaded || !article.current) return;
    const target = cited
      ? article.current.querySelector(".cited")
      : heading
        ? document.getElementById(slug(heading))
        : null;
    if (target instanceof HTMLElement) target.scrollIntoView({ block: cited ? "center" : "start" });
    else window.scrollTo(0, 0);
  }, [loaded, cited?.[0], cited?.[1], heading]);

  if (error) {
    return (
      <section className="page reader-page">
        <h1>{path.split("/").pop()?.replace(/\.md$/i, "") || "Note"}</h1>
        <div className="error" role="alert">
          {error}
        </div>
        <p>
          <Link to={browseUrl()}>Browse your notes</Link> or <Link to="/">search them</Link>.
        </p>
      </section>
    );
  }
  if (!loaded || loaded.note.path !== path) {
    return (
      <section className="page reader-page" aria-busy="true">
        <p className="muted">Opening {path}…</p>
      </section>
    );
  }
  const { note, links } = loaded;
  const context = {
    path: note.path,
    resolved: resolvedLinks(links.outgoing),
    strictLineBreaks: status?.strictLineBreaks ?? false,
  };
  const vault = vaultName(status);
  const [body, bodyLine] = withoutTitle(note.text, note.title, note.startLine);
  const page = citedPage(body, bodyLine, cited);
  // A PDF, a picture or another file of the vault is read here too, and is called what it is.
  const kind = isAttachmentName(note.path) ? "file" : "note";
  return (
    <div className="reader-layout">
      <article className="page reader-page note" ref={article} aria-labelledby="note-title">
        <header className="note-header">
          <Breadcrumbs path={note.path} />
          <h1 id="note-title" tabIndex={-1}>
            {note.title}
          </h1>
          <div className="note-meta">
            <DateChip date={note.date} source={note.dateSource} shownIn={[note.path, note.title]} />
            {note.tags.map((tag) => (
              <Link key={tag} className="tag-link" to={tagUrl(tag)}>
                #{tag}
              </Link>
            ))}
          </div>
          <div className="note-actions">
            <Link className="button primary" to={chatUrl(undefined, note.path)}>
              Ask about this {kind}
            </Link>
            <OpenOriginal path={note.path} page={page} />
            {vault ? (
              <a className="button" href={obsidianUrl(vault, note.path)}>
                Open in Obsidian
              </a>
            ) : null}
          </div>
          {cited ? (
            <p className="muted small cited-note" role="status">
              Showing {page ? `page ${page}` : `lines ${cited[0]}–${cited[1]}`}, highlighted.{" "}
              <Link to={{ search: "" }}>Clear</Link>
            </p>
          ) : null}
        </header>
        <Properties json={note.propertiesJson} />
        <div className={`md note-body${context.strictLineBreaks ? " joined-lines" : ""}`}>
          <NoteMarkdown text={body} firstLine={bodyLine} cited={cited} context={context} />
        </div>
      </article>
      <aside className="note-side" aria-label="Links and related notes">
        <OutgoingLinks
          links={links.outgoing.filter((link) => link.target && (!link.isEmbed || link.path))}
          empty={kind === "file" ? "This file links to no note." : "This note links to no other note."}
        />
        <Backlinks links={links.backlinks} />
        <RelatedNotes path={note.path} />
      </aside>
    </div>
  );
}
