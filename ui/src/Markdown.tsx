// Markdown as elements, never as HTML: answers, passages and search snippets are written by a model or taken from
// notes, so raw HTML in them (a note's <script>, an <img onerror=…>) shows as the text it is and runs nothing. There
// is no rehype-raw here, on purpose: react-markdown turns every raw HTML node into text.
//
// In answers, a citation [n] of a passage the answer read becomes a button that opens it (a remark step over text
// nodes only, so a [1] inside code or a link stays text). Code blocks get a copy button.
import type { Element, Root as HastRoot } from "hast";
import type { Emphasis, Root } from "mdast";
import { findAndReplace } from "mdast-util-find-and-replace";
import { useEffect, useRef, useState } from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import remarkGfm from "remark-gfm";

import { CITATION } from "./citedNumbers";

export { citedNumbers } from "./citedNumbers";

// [n] for each n in `numbers`, as a <cite data-number=n> the Cite component below replaces with a button.
function remarkCitations({ numbers }: { numbers: ReadonlySet<number> }) {
  return (tree: Root) => {
    findAndReplace(
      tree,
      [
        CITATION,
        (whole: string, digits: string) => {
          const number = Number(digits);
          if (!numbers.has(number)) return false; // a number with no passage stays plain text
          // Not a bare text node with an hName: the replacer would merge it into the text around it.
          const node: Emphasis = {
            type: "emphasis",
            children: [{ type: "text", value: whole }],
            data: { hName: "cite", hProperties: { dataNumber: number } } as Emphasis["data"],
          };
          return node;
        },
      ],
      { ignore: ["link", "linkReference"] },
    );
  };
}

// Obsidian's [[Note]], [[Note#Heading|shown text]] and ![[embed.png]]: the words a reader sees there (the alias, else
// the note and heading), marked as a link within the vault, with its target on hover; never the raw brackets.
// A snippet may end inside one (the search's excerpt stops at a word), so a link the text ends in counts as closed.
const WIKILINK = /(!?)\[\[([^\]\[|#\n]*)(#[^\]\[|\n]*)?(?:\|([^\]\[\n]*))?(?:\]\]|$)/g;

function remarkWikilinks() {
  return (tree: Root) => {
    findAndReplace(
      tree,
      [
        WIKILINK,
        (whole: string, embed: string, target: string, heading: string | undefined, alias: string | undefined) => {
          const section = heading ? heading.slice(1).trim() : "";
          const shown = alias?.trim() || [target.trim(), section].filter(Boolean).join(" › ") || whole;
          const node: Emphasis = {
            type: "emphasis",
            children: [{ type: "text", value: shown }],
            data: {
              hName: "span",
              hProperties: {
                className: embed ? ["wikilink", "embed"] : ["wikilink"],
                title: `${target.trim()}${heading ?? ""}`,
              },
            } as Emphasis["data"],
          };
          return node;
        },
      ],
      { ignore: ["link", "linkReference"] },
    );
  };
}

// A block of raw HTML (a line holding only <img …> or <script>…) as a paragraph of its text. react-markdown would
// turn it into text anyway, but loose at the top level, run together with the next such block.
function rehypeHtmlBlocksAsText() {
  return (tree: HastRoot) => {
    tree.children = tree.children.map((node) =>
      node.type === "raw"
        ? { type: "element", tagName: "p", properties: {}, children: [{ type: "text", value: node.value }] }
        : node,
    );
  };
}

// Copying without navigator.clipboard too: it exists only on https and localhost, and the gateway may be reached
// over plain http on a home network.
async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the selection
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "offscreen";
  document.body.appendChild(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch {
    copied = false;
  }
  area.remove();
  return copied;
}

export function CodeBlock({ children }: { children?: React.ReactNode }) {
  const pre = useRef<HTMLPreElement>(null);
  const [state, setState] = useState<"" | "copied" | "failed">("");
  useEffect(() => {
    if (!state) return;
    const timer = setTimeout(() => setState(""), 1500);
    return () => clearTimeout(timer);
  }, [state]);
  return (
    <div className="code-block">
      <button
        type="button"
        className="copy"
        aria-label="Copy code"
        onClick={async () => setState((await copyText(pre.current?.textContent ?? "")) ? "copied" : "failed")}
      >
        {state === "copied" ? "Copied" : state === "failed" ? "Select and copy" : "Copy"}
      </button>
      <pre ref={pre}>{children}</pre>
    </div>
  );
}

const BASE: Components = {
  pre: ({ children }) => <CodeBlock>{children}</CodeBlock>,
  // Links open away from the app; react-markdown has already dropped javascript: and other unsafe URLs.
  a: ({ href, children, title }) => (
    <a href={href} title={title} target="_blank" rel="noopener noreferrer">
      {children}
    </a>
  ),
  // No images from notes or answers: a remote one is a tracking pixel, and a vault's own are not served.
  img: ({ alt, src }) => (
    <span className="md-image" title={src}>
      {alt || "image"}
    </span>
  ),
  table: ({ children }) => (
    <div className="table-scroll">
      <table>{children}</table>
    </div>
  ),
};

export interface Citations<P> {
  // The passages by number; a [n] with no passage is left as text.
  byNumber: ReadonlyMap<number, P>;
  render: (passage: P) => React.ReactNode;
}

export function Markdown<P>({ text, citations }: { text: string; citations?: Citations<P> }) {
  const numbers = new Set(citations?.byNumber.keys() ?? []);
  const components: Components = citations
    ? {
        ...BASE,
        cite: ({ node, children }: { node?: Element; children?: React.ReactNode }) => {
          const passage = citations.byNumber.get(Number(node?.properties?.dataNumber));
          return passage === undefined ? <>{children}</> : <>{citations.render(passage)}</>;
        },
      }
    : BASE;
  return (
    <ReactMarkdown
      remarkPlugins={[remarkGfm, remarkWikilinks, [remarkCitations, { numbers }]]}
      rehypePlugins={[rehypeHtmlBlocksAsText]}
      components={components}
    >
      {text}
    </ReactMarkdown>
  );
}

// Where a search snippet's matched words are: ranges of code points, as the API gives them (never markers in the
// text: a note's own **bold** would look like one).
export interface Highlight {
  start: number;
  end: number;
}

// Private-use characters, which notes do not hold, put around each highlight before the markdown is parsed and turned
// into <mark> by remarkMarks, so a match inside the note's own bold or a link is marked where it is.
const OPEN = "\ue000";
const CLOSE = "\ue001";
const MARKED = /\ue000([^\ue000\ue001]*)\ue001/g;
const STRAY = /[\ue000\ue001]/g;

function withMarks(text: string, highlights: readonly Highlight[]): string {
  const characters = Array.from(text); // code points, as the ranges count
  const ordered = [...highlights].sort((a, b) => b.start - a.start);
  for (const { start, end } of ordered) {
    if (start < 0 || end > characters.length || start >= end) continue;
    characters.splice(end, 0, CLOSE);
    characters.splice(start, 0, OPEN);
  }
  return characters.join("");
}

function remarkMarks() {
  return (tree: Root) => {
    findAndReplace(tree, [
      [
        MARKED,
        (_: string, words: string) => {
          const node: Emphasis = {
            type: "emphasis",
            children: [{ type: "text", value: words }],
            data: { hName: "mark" } as Emphasis["data"],
          };
          return node;
        },
      ],
      // A range the markdown split (half in a link's text, say) is left unmarked rather than shown as odd characters.
      [STRAY, ""],
    ]);
  };
}

// A search snippet: the block of a note around its match (a paragraph, a list item, a table row under its header, a
// line of code), as the search service shaped it from the note, its matched words highlighted. Rendered as the note
// renders, with only the elements a snippet can hold: no headings, images or links out.
const SNIPPET_ELEMENTS = [
  "p", "strong", "em", "code", "del", "mark", "span", "ul", "ol", "li", "blockquote",
  "table", "thead", "tbody", "tr", "th", "td",
];

export function Snippet({ text, highlights }: { text: string; highlights: readonly Highlight[] }) {
  return (
    <ReactMarkdown
      remarkPlugins={[remarkGfm, remarkMarks, remarkWikilinks]}
      allowedElements={SNIPPET_ELEMENTS}
      unwrapDisallowed
    >
      {withMarks(text, highlights)}
    </ReactMarkdown>
  );
}
