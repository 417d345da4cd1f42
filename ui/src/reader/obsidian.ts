// What Obsidian's markdown adds to CommonMark + GFM, as remark and rehype steps for the reader: [[wikilinks]] and
// ![[embeds]], #tags, callouts (> [!note] Title), heading ids, and each block's lines in the note's file, so a
// citation's lines can be highlighted. Every step builds elements, never HTML: a note's raw HTML stays text.
import type { Element, ElementContent, Root as HastRoot } from "hast";
import type { Blockquote, Emphasis, Paragraph, PhrasingContent, Root, Text } from "mdast";
import { findAndReplace, type RegExpMatchObject } from "mdast-util-find-and-replace";

// [[target#heading|alias]] and ![[...]]; the target may be empty ([[#heading]] is this note's heading).
export const WIKILINK = /(!?)\[\[([^\]\[|#^\n]*)((?:#[^\]\[|\n]*)?)(?:\|([^\]\[\n]*))?\]\]/g;

// A tag as Obsidian reads one (and the index: services/ingest/note.py): '#' after a space or at the start of a
// line, letters, digits, '_', '-', '/', not digits alone.
const TAG = /(^|\s)#([\p{L}\p{N}_\-/]*[\p{L}_\-/][\p{L}\p{N}_\-/]*)/gu;

function element(hName: string, hProperties: Record<string, unknown>, children: PhrasingContent[]): Emphasis {
  // An emphasis node renamed: a bare text node with an hName would be merged into the text around it.
  return { type: "emphasis", children, data: { hName, hProperties } as Emphasis["data"] };
}

// Each wikilink becomes <wikilink data-target data-heading data-alias data-embed>, shown by the reader's component.
export function remarkWikilinks() {
  return (tree: Root) => {
    findAndReplace(
      tree,
      [
        WIKILINK,
        (whole: string, embed: string, target: string, heading: string, alias: string | undefined) => {
          const section = heading.replace(/^#/, "").trim();
          const shown = alias?.trim() || [target.trim(), section].filter(Boolean).join(" › ") || whole;
          return element(
            "wikilink",
            { dataTarget: target.trim(), dataHeading: section, dataAlias: alias?.trim() ?? "", dataEmbed: embed ? "1" : "" },
            [{ type: "text", value: shown }],
          );
        },
      ],
      { ignore: ["link", "linkReference"] },
    );
  };
}

// Each #tag becomes <tag data-tag>, a link to the tag's notes.
export function remarkTags() {
  return (tree: Root) => {
    findAndReplace(
      tree,
      [
        TAG,
        (_: string, before: string, tag: string, match: RegExpMatchObject) => {
          if (!before && !startsALine(match.stack)) return false;
          const clean = tag.replace(/\/+$/, "");
          const node = element("tag", { dataTag: clean }, [{ type: "text", value: `#${clean}` }]);
          return before ? [{ type: "text", value: before } as Text, node] : node;
        },
      ],
      { ignore: ["link", "linkReference", "wikilink"] },
    );
  };
}

// Whether a text node begins a line of its block: so a '#' at its start follows nothing, not a code span, a link
// or emphasis ("`x`#a" and "[[x]]#a" are no tags in Obsidian, nor in the index).
function startsALine(stack: RegExpMatchObject["stack"]): boolean {
  const node = stack[stack.length - 1];
  const parent = stack[stack.length - 2] as { type: string; children: { type: string }[] } | undefined;
  if (!parent) return true;
  const index = parent.children.indexOf(node);
  if (index > 0) return parent.children[index - 1].type === "break";
  return ["paragraph", "heading", "tableCell"].includes(parent.type);
}

const CALLOUT = /^\[!([\w-]+)\]([+-]?)[ \t]*(.*)$/;

// > [!warning] Title  becomes  <div class="callout" data-callout="warning"><div class="callout-title">Title</div>…
export function remarkCallouts() {
  return (tree: Root) => {
    const visit = (node: Root | Blockquote | { children?: unknown[] }) => {
      for (const child of (node.children ?? []) as { type: string; children?: unknown[] }[]) {
        if (child.type === "blockquote") callout(child as Blockquote);
        if (child.children) visit(child);
      }
    };
    visit(tree);
  };
}

function callout(quote: Blockquote) {
  const first = quote.children[0];
  if (first?.type !== "paragraph") return;
  const lead = first.children[0];
  if (lead?.type !== "text") return;
  const newline = lead.value.indexOf("\n");
  const line = newline < 0 ? lead.value : lead.value.slice(0, newline);
  const match = CALLOUT.exec(line);
  if (!match) return;
  const kind = match[1].toLowerCase();
  const rest = newline < 0 ? "" : lead.value.slice(newline + 1);
  // The title is the rest of the marker's line (with any inline markup after it on that line), else the kind.
  const titleChildren: PhrasingContent[] = match[3] ? [{ type: "text", value: match[3] }] : [];
  let remaining = first.children.slice(1);
  if (newline < 0) {
    // The title's line goes on past the first text node (a link, emphasis) until the paragraph's first line break.
    const breakAt = remaining.findIndex((n) => n.type === "break" || (n.type === "text" && n.value.includes("\n")));
    const upTo = breakAt < 0 ? remaining.length : breakAt;
    titleChildren.push(...remaining.slice(0, upTo));
    remaining = remaining.slice(upTo);
    const at = remaining[0];
    if (at?.type === "break") remaining = remaining.slice(1);
    else if (at?.type === "text") remaining = [{ ...at, value: at.value.slice(at.value.indexOf("\n") + 1) }, ...remaining.slice(1)];
  } else if (rest) {
    remaining = [{ ...lead, value: rest }, ...remaining];
  }
  if (!titleChildren.length) titleChildren.push({ type: "text", value: kind.charAt(0).toUpperCase() + kind.slice(1) });
  const title: Paragraph = {
    type: "paragraph",
    children: titleChildren,
    data: { hName: "div", hProperties: { className: ["callout-title"] } } as Paragraph["data"],
  };
  const body: Paragraph[] = remaining.length ? [{ ...first, children: remaining }] : [];
  quote.children = [title, ...body, ...quote.children.slice(1)];
  quote.data = { hName: "div", hProperties: { className: ["callout"], dataCallout: kind } } as Blockquote["data"];
}

// A heading's id, as the reader's #heading links and Obsidian's [[note#Heading]] name it: its text, lower case,
// runs of anything but letters and digits as one '-'.
export function slug(text: string): string {
  return (
    text
      .normalize("NFC")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}]+/gu, "-")
      .replace(/^-+|-+$/g, "") || "section"
  );
}

function textOf(node: ElementContent | Element): string {
  if (node.type === "text") return node.value;
  if (node.type === "element") return node.children.map(textOf).join("");
  return "";
}

const BLOCKS = new Set(["p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "tr", "blockquote", "div", "hr"]);

// Heading ids (unique within the note), and on every block its lines in the note's file (`firstLine` is the line
// the body starts on), marked `cited` when they meet the cited lines.
export function rehypeNoteLines({ firstLine, cited }: { firstLine: number; cited?: [number, number] }) {
  return (tree: HastRoot) => {
    const used = new Map<string, number>();
    const walk = (node: HastRoot | Element) => {
      for (const child of node.children) {
        if (child.type !== "element") continue;
        if (/^h[1-6]$/.test(child.tagName)) {
          const base = slug(textOf(child));
          const seen = used.get(base) ?? 0;
          used.set(base, seen + 1);
          child.properties.id = seen ? `${base}-${seen}` : base;
        }
        const position = child.position;
        if (BLOCKS.has(child.tagName) && position) {
          const start = position.start.line + firstLine - 1;
          const end = position.end.line + firstLine - 1;
          child.properties.dataLineStart = start;
          child.properties.dataLineEnd = end;
          // Only the innermost blocks are marked: a list item, not the list and every item in it.
          const innermost = !child.children.some((c) => c.type === "element" && BLOCKS.has(c.tagName) && c.tagName !== "div");
          if (cited && innermost && start <= cited[1] && end >= cited[0]) {
            const existing = child.properties.className;
            const classes = Array.isArray(existing) ? existing : existing ? [String(existing)] : [];
            child.properties.className = [...classes, "cited"];
          }
        }
        walk(child);
      }
    };
    walk(tree);
  };
}

// A section of a note's markdown: from the heading named to the next heading of its level or higher (for
// ![[note#Heading]]); the whole text when no heading matches.
export function section(markdown: string, heading: string): string {
  if (!heading) return markdown;
  const lines = markdown.split("\n");
  const wanted = slug(heading);
  const start = lines.findIndex((line) => {
    const match = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    return match !== null && slug(match[2]) === wanted;
  });
  if (start < 0) return markdown;
  const level = /^(#+)/.exec(lines[start])![1].length;
  let end = start + 1;
  while (end < lines.length) {
    const match = /^(#{1,6})\s/.exec(lines[end]);
    if (match && match[1].length <= level) break;
    end += 1;
  }
  return lines.slice(start, end).join("\n");
}
