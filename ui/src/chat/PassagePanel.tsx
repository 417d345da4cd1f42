// The passage panel: the passage a citation cites, its note (a link to the reader at these lines), heading path,
// lines and date, its text rendered, and "Open in Obsidian" for those who have it. It takes focus when it opens and
// gives it back when it closes. Escape closes it (the chat page listens, so that only the topmost of it and the
// settings closes), and so does a click anywhere outside it but on another citation, which shows that one instead.
import { useEffect, useRef } from "react";
import type { Passage } from "../gen/secondbrain/v1/retrieval_pb";
import { DateChip } from "../DateChip";
import { LazyMarkdown } from "../LazyMarkdown";
import { obsidianUrl } from "../routes";
import { OpenOriginal } from "../reader/OpenOriginal";
import { OPENS_PASSAGE, ReaderLink } from "./Cite";
import { useDialogFocus } from "./focus";
import "./passage.css";


function linesOf(passage: Passage): string {
  if (passage.pageStart) {
    return passage.pageEnd && passage.pageEnd !== passage.pageStart
      ? `pages ${passage.pageStart}–${passage.pageEnd}`
      : `page ${passage.pageStart}`;
  }
  return passage.startLine === passage.endLine
    ? `line ${passage.startLine}`
    : `lines ${passage.startLine}–${passage.endLine}`;
}

export function PassagePanel({
  passage,
  vaultName,
  joinLines = false,
  onClose,
}: {
  passage: Passage;
  vaultName?: string;
  // The vault's Obsidian setting "Strict line breaks": a paragraph's single line breaks are joined.
  joinLines?: boolean;
  onClose: () => void;
}) {
  const panel = useRef<HTMLElement>(null);
  useDialogFocus(panel);
  useEffect(() => {
    function outside(event: PointerEvent) {
      const target = event.target;
      if (!(target instanceof Element) || panel.current?.contains(target)) return;
      if (target.closest(`[${OPENS_PASSAGE}]`)) return;
      onClose();
    }
    document.addEventListener("pointerdown", outside);
    return () => document.removeEventListener("pointerdown", outside);
  }, [onClose]);
  const titleId = `passage-${passage.number}-title`;
  return (
    <section className="passage" role="dialog" aria-labelledby={titleId} ref={panel} tabIndex={-1}>
      <header>
        <h2 id={titleId}>
          <span className="visually-hidden">Passage </span>
          <span aria-hidden="true">[</span>
          {passage.number}
          <span aria-hidden="true">]</span>
        </h2>
        <ReaderLink passage={passage}>
          <span className="note-path">{passage.notePath}</span>
        </ReaderLink>
        <button className="icon" aria-label="Close passage" onClick={onClose}>
          ×
        </button>
      </header>
      <div className="heading-path">{[passage.noteTitle, ...passage.headingPath].join(" › ")}</div>
      <div className="passage-meta muted small">
        <span className="lines">{linesOf(passage)}</span>
        <DateChip
          date={passage.date}
          source={passage.dateSource}
          shownIn={[passage.notePath, passage.noteTitle, ...passage.headingPath]}
        />
        <OpenOriginal path={passage.notePath} page={passage.pageStart || undefined} className="link" />
        {vaultName ? (
          <a className="obsidian" href={obsidianUrl(vaultName, passage.notePath)}>
            Open in Obsidian
          </a>
        ) : null}
      </div>
      <div className={joinLines ? "passage-text md joined-lines" : "passage-text md"}>
        <LazyMarkdown text={passage.text} />
      </div>
    </section>
  );
}
