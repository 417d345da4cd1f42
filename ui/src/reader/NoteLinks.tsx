// Beside the note: the notes it links to (and the links that name no note in the index), and the notes that link
// to it, each opening in the reader (a backlink at the line the link is on).
import { Link } from "react-router";
import type { NoteLink } from "../gen/secondbrain/retrieve/v1/retrieve_service_pb";
import { noteName } from "../notePaths";
import { noteUrl } from "../routes";

// One section beside the note: a heading (with a count) and what it lists, or a line saying there is nothing.
export function SideSection({
  id,
  title,
  count,
  empty,
  children,
}: {
  id: string;
  title: string;
  count?: number;
  // Said instead of the list when count is 0.
  empty?: string;
  children?: React.ReactNode;
}) {
  return (
    <section className="side-section" aria-labelledby={id}>
      <h2 id={id}>
        {title} {count === undefined ? null : <span className="count">{count}</span>}
      </h2>
      {count === 0 && empty ? <p className="muted small">{empty}</p> : children}
    </section>
  );
}


// `empty`: what is said when there is none (a note "links to no other note"; a PDF is no note).
export function OutgoingLinks({ links, empty }: { links: readonly NoteLink[]; empty: string }) {
  const seen = new Set<string>();
  const unique = links.filter((link) => {
    const key = link.path || `?${link.target.toLowerCase()}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return (
    <SideSection id="outgoing-title" title="Links" count={unique.length} empty={empty}>
      <ul className="link-list">
        {unique.map((link) => (
          <li key={link.path || link.target}>
            {link.path ? (
              <Link to={noteUrl(link.path)}>{noteName(link.path)}</Link>
            ) : (
              <span className="unresolved" title="No note of this name is in the index">
                {link.target} <span className="muted small">(not in the index)</span>
              </span>
            )}
          </li>
        ))}
      </ul>
    </SideSection>
  );
}

// The pages of a PDF that a note's links to it name (Obsidian's `[[manual.pdf#page=3]]`), in order, once each.
function pagesCited(links: readonly NoteLink[]): string[] {
  const pages = links.map((link) => /^page=(\d+)$/.exec(link.heading)?.[1]).filter((page) => page !== undefined);
  return [...new Set(pages)];
}

export function Backlinks({ links }: { links: readonly NoteLink[] }) {
  const byNote = new Map<string, NoteLink[]>();
  for (const link of links) byNote.set(link.path, [...(byNote.get(link.path) ?? []), link]);
  return (
    <SideSection id="backlinks-title" title="Backlinks" count={byNote.size} empty="No note links here.">
      <ul className="link-list">
        {[...byNote].map(([path, from]) => {
          const pages = pagesCited(from);
          return (
            <li key={path}>
              <Link to={noteUrl(path, { lines: [from[0].line, from[0].line] })}>{noteName(path)}</Link>
              <span className="muted small">
                {" "}
                {from.length === 1 ? `line ${from[0].line}` : `${from.length} links`}
                {pages.length ? `, citing ${pages.length === 1 ? "page" : "pages"} ${pages.join(", ")}` : null}
              </span>
            </li>
          );
        })}
      </ul>
    </SideSection>
  );
}
