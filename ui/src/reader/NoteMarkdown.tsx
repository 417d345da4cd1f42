// A note's markdown as Obsidian shows it, for the reader: headings with ids, callouts, tables, task lists, code
// highlighted, [[links]] that navigate inside the reader (unresolved ones shown as such), ![[note]] embeds,
// ![[image.png]] images from the vault, and #tags that open the tag's notes. Elements only, never a note's HTML.
import type { Element } from "hast";
import { useEffect, useState } from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import { Link } from "react-router";
import type { Options as HighlightOptions } from "rehype-highlight";
import remarkGfm from "remark-gfm";
import { describeError, retrieve } from "../api";
import { CodeBlock } from "../Markdown";
import { noteUrl, tagUrl } from "../routes";
import { isAttachmentName, type LoadedAttachment, loadAttachment } from "./attachments";
import { rehypeNoteLines, remarkCallouts, remarkTags, remarkWikilinks, section, slug } from "./obsidian";

// How deep ![[note]] embeds nest: a note embedding itself, or two embedding each other, stop here.
const MAX_EMBED_DEPTH = 2;

export interface NoteContext {
  // The note being shown (its own [[#heading]] links, and where a bare file name is resolved from).
  path: string;
  // The note's outgoing links resolved by the index: link target (lower case) -> note path.
  resolved: ReadonlyMap<string, string>;
  // The vault's "Strict line breaks": single line breaks inside a paragraph are joined (the `joined-lines` class
  // of the text's container; otherwise each shows as a break, as in Obsidian by default).
  strictLineBreaks: boolean;
}

function property(node: Element | undefined, name: string): string {
  const value = node?.properties?.[name];
  return value === undefined || value === null ? "" : String(value);
}

function AttachmentView({ target, fromPath, alt }: { target: string; fromPath: string; alt: string }) {
  const [file, setFile] = useState<LoadedAttachment>();
  const [error, setError] = useState("");
  useEffect(() => {
    let live = true;
    loadAttachment(target, fromPath).then(
      (loaded) => live && setFile(loaded),
      (e) => live && setError(describeError(e)),
    );
    return () => {
      live = false;
    };
  }, [target, fromPath]);
  if (error) {
    return (
      <span className="attachment-error" role="note">
        {target} could not be shown: {error}
      </span>
    );
  }
  if (!file) return <span className="attachment-loading">{alt || target}…</span>;
  if (file.mediaType.startsWith("image/")) {
    return <img className="vault-image" src={file.url} alt={alt || file.path.split("/").pop() || target} loading="lazy" />;
  }
  const page = /#page=(\d+)/.exec(target)?.[1];
  return (
    <a className="attachment-link" href={page ? `${file.url}#page=${page}` : file.url} target="_blank" rel="noopener">
      {alt || file.path}
    </a>
  );
}

function NoteEmbed({ path, heading, depth, strict }: { path: string; heading: string; depth: number; strict: boolean }) {
  const [text, setText] = useState<string>();
  const [context, setContext] = useState<NoteContext>();
  const [error, setError] = useState("");
  useEffect(() => {
    let live = true;
    Promise.all([retrieve.getNote({ path }), retrieve.getNoteLinks({ path })]).then(
      ([note, links]) => {
        if (!live) return;
        setText(section(note.text, heading));
        setContext({ path: note.path, resolved: resolvedLinks(links.outgoing), strictLineBreaks: strict });
      },
      (e) => live && setError(describeError(e)),
    );
    return () => {
      live = false;
    };
  }, [path, heading, strict]);
  const title = heading ? `${path.replace(/\.md$/i, "")} › ${heading}` : path.replace(/\.md$/i, "");
  return (
    <div className="note-embed" role="group" aria-label={`Embedded: ${title}`}>
      <div className="note-embed-title">
        <Link to={noteUrl(path, { heading: heading || undefined })}>{title}</Link>
      </div>
      {error ? <p className="attachment-error">{error}</p> : null}
      {text !== undefined && context ? (
        <div className={`md${strict ? " joined-lines" : ""}`}>
          <NoteMarkdown text={text} firstLine={1} context={context} depth={depth} />
        </div>
      ) : null}
    </div>
  );
}

export function resolvedLinks(outgoing: readonly { target: string; path: string }[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const link of outgoing) if (link.path) map.set(link.target.toLowerCase(), link.path);
  return map;
}

function Wikilink({ node, children, context, depth }: { node?: Element; children?: React.ReactNode; context: NoteContext; depth: number }) {
  const target = property(node, "dataTarget");
  const heading = property(node, "dataHeading");
  const alias = property(node, "dataAlias");
  const embed = property(node, "dataEmbed") === "1";
  if (!target) {
    // [[#Heading]]: a heading of this note.
    return (
      <a className="wikilink" href={`#${slug(heading)}`}>
        {children}
      </a>
    );
  }
  // A file that is not a note is shown as itself (a picture, a link opening the PDF at its page), as Obsidian shows
  // it, though the index holds its text too (the reader opens that from the links beside the note).
  if (isAttachmentName(target)) {
    const withPage = heading ? `${target}#${heading}` : target;
    return embed ? (
      <AttachmentView target={withPage} fromPath={context.path} alt={alias} />
    ) : (
      <AttachmentView target={withPage} fromPath={context.path} alt={alias || String(target)} />
    );
  }
  const path = context.resolved.get(target.toLowerCase());
  if (path && embed) {
    return depth < MAX_EMBED_DEPTH ? (
      <NoteEmbed path={path} heading={heading} depth={depth + 1} strict={context.strictLineBreaks} />
    ) : (
      <Link className="wikilink" to={noteUrl(path, { heading: heading || undefined })}>
        {children}
      </Link>
    );
  }
  if (path) {
    return (
      <Link className="wikilink" to={noteUrl(path, { heading: heading || undefined })} title={path}>
        {children}
      </Link>
    );
  }
  return (
    <span className="wikilink unresolved" title={`No note named “${target}” in the index`}>
      {children}
    </span>
  );
}

// A markdown link or image to a file of the vault (no scheme): a note opens in the reader, an image is shown.
function isVaultUrl(url: string): boolean {
  return !!url && !/^[a-z][a-z0-9+.-]*:/i.test(url) && !url.startsWith("//") && !url.startsWith("#");
}

function joinFrom(notePath: string, relative: string): string {
  const folder = notePath.split("/").slice(0, -1);
  for (const part of relative.split("/")) {
    if (part === "..") folder.pop();
    else if (part && part !== ".") folder.push(part);
  }
  return folder.join("/");
}

// A paragraph that is only an embed of a note (![[Note]] on its own line) is the embedded note, not a paragraph
// holding it: a note's blocks cannot sit inside a <p>.
function embedsOnly(node: Element | undefined): boolean {
  const children = (node?.children ?? []).filter((child) => !(child.type === "text" && !child.value.trim()));
  return (
    children.length > 0 &&
    children.every(
      (child) => child.type === "element" && child.tagName === "wikilink" && child.properties?.dataEmbed === "1",
    )
  );
}

function components(context: NoteContext, depth: number): Components {
  return {
    // (The blocks keep their properties: their lines, and `cited`.)
    p: ({ node, children, ...rest }) =>
      embedsOnly(node) ? <div className="embeds">{children}</div> : <p {...rest}>{children}</p>,
    pre: ({ node, children }) => (
      <div
        className={[node?.properties?.className ?? []].flat().join(" ") || undefined}
        data-line-start={property(node, "dataLineStart") || undefined}
        data-line-end={property(node, "dataLineEnd") || undefined}
      >
        <CodeBlock>{children}</CodeBlock>
      </div>
    ),
    a: ({ href, children, title }) => {
      if (href && isVaultUrl(href) && /\.md(#|$)/i.test(decodeURI(href))) {
        const [file, heading] = decodeURI(href).split("#");
        return (
          <Link className="wikilink" to={noteUrl(joinFrom(context.path, file), { heading })}>
            {children}
          </Link>
        );
      }
      if (href?.startsWith("#")) return <a href={`#${slug(decodeURIComponent(href.slice(1)))}`}>{children}</a>;
      return (
        <a href={href} title={title} target="_blank" rel="noopener noreferrer">
          {children}
        </a>
      );
    },
    // An image of the vault is shown from its bytes; a remote one is not loaded (it would be a tracking pixel).
    img: ({ alt, src }) =>
      typeof src === "string" && isVaultUrl(src) ? (
        <AttachmentView target={decodeURI(src)} fromPath={context.path} alt={alt ?? ""} />
      ) : (
        <span className="md-image" title={typeof src === "string" ? src : undefined}>
          {alt || "image"}
        </span>
      ),
    input: ({ type, checked }) =>
      type === "checkbox" ? (
        <input type="checkbox" checked={!!checked} disabled aria-label={checked ? "Done" : "Not done"} />
      ) : null,
    table: ({ children }) => (
      <div className="table-scroll">
        <table>{children}</table>
      </div>
    ),
    // Names react-markdown does not know, made by the remark steps in obsidian.ts.
    ...({
      wikilink: ({ node, children }: { node?: Element; children?: React.ReactNode }) => (
        <Wikilink node={node} context={context} depth={depth}>
          {children}
        </Wikilink>
      ),
      tag: ({ node, children }: { node?: Element; children?: React.ReactNode }) => (
        <Link className="tag-link" to={tagUrl(property(node, "dataTag"))}>
          {children}
        </Link>
      ),
    } as Components),
  };
}

type Highlighter = (options: HighlightOptions) => (tree: import("hast").Root) => void;
let highlighter: Promise<Highlighter> | undefined;

// The code highlighter (highlight.js's common languages: most of the reader's script) is loaded only for a note
// with a fenced code block, and the note is shown at once, its code plain until the highlighter is there.
function useHighlighter(text: string): Highlighter | undefined {
  const needed = /^\s*(```|~~~)/m.test(text);
  const [loaded, setLoaded] = useState<Highlighter>();
  useEffect(() => {
    if (!needed || loaded) return;
    let live = true;
    highlighter ??= import("rehype-highlight").then((module) => module.default as Highlighter);
    highlighter.then(
      (plugin) => live && setLoaded(() => plugin),
      () => undefined, // without it, code stays plain
    );
    return () => {
      live = false;
    };
  }, [needed, loaded]);
  return needed ? loaded : undefined;
}

export function NoteMarkdown({
  text,
  firstLine,
  cited,
  context,
  depth = 0,
}: {
  text: string;
  // The file line the text starts on.
  firstLine: number;
  cited?: [number, number];
  context: NoteContext;
  depth?: number;
}) {
  const highlight = useHighlighter(text);
  return (
    <ReactMarkdown
      remarkPlugins={[remarkGfm, remarkCallouts, remarkWikilinks, remarkTags]}
      rehypePlugins={[
        ...(highlight ? [[highlight, { detect: false }] as [Highlighter, HighlightOptions]] : []),
        [rehypeNoteLines, { firstLine, cited }],
      ]}
      components={components(context, depth)}
    >
      {text}
    </ReactMarkdown>
  );
}
