// Beside the note: the notes it links to (and the links that name no note in the index), and the notes that link
// to it, each opening in the reader (a backlink at the line the link is on).
import { Link } from "react-router";
import type { NoteLink } from "../gen/secondbrain/retrieve/v1/retrieve_service_pb";
import { noteUrl } from "../routes";

export function noteName(path: string): string {
  return (path.split("/").pop() ?? path).replace(/\.md$/i, "");
}

export function OutgoingLinks({ links }: { links: readonly NoteLink[] }) {
  const seen = new Set<string>();
  const unique = links.filter((link) => {
    const key = link.path || `?${link.target.toLowerCase()}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return (
    <section className="side-section" aria-labelledby="outgoing-title">
      <h2 id="outgoing-title">
        Links <span className="count">{unique.length}</span>
      </h2>
      {unique.length ? (
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
      ) : (
        <p className="muted small">This note links to no other note.</p>
      )}
    </section>
  );
}

export function Backlinks({ links }: { links: readonly NoteLink[] }) {
  const byNote = new Map<string, NoteLink[]>();
  for (const link of links) byNote.set(link.path, [...(byNote.get(link.path) ?? []), link]);
  return (
    <section className="side-section" aria-labelledby="backlinks-title">
      <h2 id="backlinks-title">
        Backlinks <span className="count">{byNote.size}</span>
      </h2>
      {byNote.size ? (
        <ul className="link-list">
          {[...byNote].map(([path, from]) => (
            <li key={path}>
              <Link to={noteUrl(path, { lines: [from[0].line, from[0].line] })}>{noteName(path)}</Link>
              <span className="muted small">
                {" "}
                {from.length === 1 ? `line ${from[0].line}` : `${from.length} links`}
              </span>
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted small">No note links here.</p>
      )}
    </section>
  );
}
