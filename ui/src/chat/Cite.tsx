// A citation [n]: a button that opens the passage it cites in the passage panel; and the link that opens the
// passage's note in the reader at its lines.
import { Link } from "react-router";
import type { Passage } from "../gen/secondbrain/v1/retrieval_pb";
import { noteUrl } from "../routes";

// Clicks on these open a passage, so they do not count as a click outside the open one.
export const OPENS_PASSAGE = "data-opens-passage";

export function whereIn(passage: Passage): string {
  return `${passage.notePath}${passage.headingPath.length ? " › " + passage.headingPath.join(" › ") : ""}`;
}

export function Cite({ passage, onCite }: { passage: Passage; onCite: (passage: Passage) => void }) {
  return (
    <button
      className="cite"
      type="button"
      {...{ [OPENS_PASSAGE]: "" }}
      title={whereIn(passage)}
      onClick={() => onCite(passage)}
    >
      [{passage.number}]
    </button>
  );
}

// The reader at the passage's lines, highlighted.
export function passageUrl(passage: Passage): string {
  return noteUrl(passage.notePath, { lines: [passage.startLine, Math.max(passage.startLine, passage.endLine)] });
}

export function ReaderLink({ passage, children }: { passage: Passage; children: React.ReactNode }) {
  return (
    <Link className="reader-link" to={passageUrl(passage)} title={`Read ${passage.notePath} at these lines`}>
      {children}
    </Link>
  );
}
