// The notes related to the one being read (RetrieveService.GetRelatedNotes): nearest by meaning together with
// shared links and tags, each with why, opening at the passage nearest to this note.
import { Code, ConnectError } from "@connectrpc/connect";
import { useEffect, useState } from "react";
import { Link } from "react-router";
import { describeError, retrieve } from "../api";
import type { GetRelatedNotesResponse } from "../gen/secondbrain/retrieve/v1/retrieve_service_pb";
import { noteUrl } from "../routes";
import { SideSection } from "./NoteLinks";

export function RelatedNotes({ path }: { path: string }) {
  const [related, setRelated] = useState<GetRelatedNotesResponse>();
  const [error, setError] = useState("");
  const [unavailable, setUnavailable] = useState(false);
  useEffect(() => {
    let live = true;
    setRelated(undefined);
    setError("");
    retrieve.getRelatedNotes({ path, limit: 8 }).then(
      (reply) => live && setRelated(reply),
      (e) => {
        if (!live) return;
        if (e instanceof ConnectError && e.code === Code.Unimplemented) setUnavailable(true);
        else setError(describeError(e));
      },
    );
    return () => {
      live = false;
    };
  }, [path]);
  if (unavailable) return null;
  return (
    <SideSection id="related-title" title="Related notes">
      {error ? <p className="error small">{error}</p> : null}
      {related?.meaningSkippedReason ? <p className="muted small">{related.meaningSkippedReason}</p> : null}
      {related ? (
        related.notes.length ? (
          <ul className="link-list related-list">
            {related.notes.map((note) => (
              <li key={note.path} data-testid="related">
                <Link
                  to={noteUrl(note.path, note.startLine ? { lines: [note.startLine, note.endLine] } : {})}
                  title={note.headingPath.length ? note.headingPath.join(" › ") : note.path}
                >
                  {note.title}
                </Link>
                <div className="muted small why">{note.reason}</div>
              </li>
            ))}
          </ul>
        ) : (
          <p className="muted small">No other note is close to this one yet.</p>
        )
      ) : error ? null : (
        <p className="muted small">Finding related notes…</p>
      )}
    </SideSection>
  );
}
