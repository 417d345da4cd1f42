// "Open the PDF at page 12": an attachment's own file (a PDF or a picture), read with GetAttachment over grpc-web
// (the token goes with the call) and opened in a new tab as a blob: URL, a PDF at the page Obsidian's own link names
// (`file.pdf#page=12`), which the browser's PDF viewer opens at. Files the server does not serve (Office files,
// canvases) have only their text, in the reader.
import { useState } from "react";
import { describeError } from "../api";
import { loadAttachment } from "./attachments";

const SERVED = /\.(pdf|png|jpe?g|gif|webp|avif|bmp)$/i;

export function servesOriginal(path: string): boolean {
  return SERVED.test(path);
}

// Obsidian's link to a page of a PDF: `Manuals/Guide.pdf#page=12`.
export function pageLink(path: string, page?: number): string {
  return page ? `${path}#page=${page}` : path;
}

export function OpenOriginal({
  path,
  page,
  className = "button",
}: {
  path: string;
  page?: number;
  className?: string;
}) {
  const [problem, setProblem] = useState("");
  const [opening, setOpening] = useState(false);
  if (!servesOriginal(path)) return null;
  const isPdf = /\.pdf$/i.test(path);
  const label = isPdf ? (page ? `Open the PDF at page ${page}` : "Open the PDF") : "Open the picture";
  async function open() {
    setOpening(true);
    setProblem("");
    try {
      const file = await loadAttachment(path, "");
      const target = isPdf && page ? `${file.url}#page=${page}` : file.url;
      // Still within the click's activation: a browser lets the tab open.
      if (!window.open(target, "_blank")) setProblem("The browser blocked the new tab: allow pop-ups for this site.");
    } catch (error) {
      setProblem(describeError(error));
    } finally {
      setOpening(false);
    }
  }
  return (
    <>
      <button
        type="button"
        className={className}
        onClick={open}
        disabled={opening}
        data-page-link={pageLink(path, page)}
      >
        {opening ? "Opening…" : label}
      </button>
      {problem ? (
        <span className="muted small" role="alert">
          {problem}
        </span>
      ) : null}
    </>
  );
}
