// Folders or nested tags ("project/kitchen") as a tree with counts: each level a list, a branch folded behind a
// button that says whether it is open, each name a link to its notes.
import { useState } from "react";
import { Link } from "react-router";
import type { FacetCount } from "../gen/secondbrain/retrieve/v1/retrieve_service_pb";

interface TreeNode {
  value: string;
  name: string;
  count: number;
  children: TreeNode[];
}

// The facets as a tree; a parent the list does not name (counts from the service include children, so it names
// them all, but a partial list may not) gets the sum of its children.
export function buildTree(items: readonly FacetCount[]): TreeNode[] {
  const nodes = new Map<string, TreeNode>();
  const roots: TreeNode[] = [];
  const node = (value: string): TreeNode => {
    let found = nodes.get(value);
    if (!found) {
      found = { value, name: value.split("/").pop() ?? value, count: 0, children: [] };
      nodes.set(value, found);
      const parent = value.includes("/") ? node(value.slice(0, value.lastIndexOf("/"))) : undefined;
      (parent ? parent.children : roots).push(found);
    }
    return found;
  };
  const named = new Set(items.map((item) => item.value));
  for (const item of [...items].sort((a, b) => a.value.localeCompare(b.value))) node(item.value).count = item.count;
  const fill = (n: TreeNode): number => {
    const sum = n.children.reduce((total, child) => total + fill(child), 0);
    if (!named.has(n.value)) n.count = sum;
    return n.count;
  };
  roots.forEach(fill);
  return roots;
}

function Branch({
  node,
  selected,
  hrefOf,
  prefix,
}: {
  node: TreeNode;
  selected: string;
  hrefOf: (value: string) => string;
  prefix: string;
}) {
  const within = selected === node.value || selected.startsWith(`${node.value}/`);
  const [open, setOpen] = useState(within);
  const current = selected === node.value;
  return (
    <li>
      <div className={`tree-row${current ? " current" : ""}`}>
        {node.children.length ? (
          <button
            type="button"
            className="tree-toggle"
            aria-expanded={open}
            aria-label={`${open ? "Fold" : "Unfold"} ${prefix}${node.value}`}
            onClick={() => setOpen(!open)}
          >
            <span aria-hidden="true">{open ? "▾" : "▸"}</span>
          </button>
        ) : (
          <span className="tree-toggle-space" aria-hidden="true" />
        )}
        <Link to={hrefOf(node.value)} aria-current={current ? "page" : undefined}>
          {prefix}
          {node.name}
        </Link>
        <span className="count" aria-label={`${node.count} note${node.count === 1 ? "" : "s"}`}>
          {node.count}
        </span>
      </div>
      {open && node.children.length ? (
        <ul>
          {node.children.map((child) => (
            <Branch key={child.value} node={child} selected={selected} hrefOf={hrefOf} prefix={prefix} />
          ))}
        </ul>
      ) : null}
    </li>
  );
}

export function FacetTree({
  items,
  selected,
  hrefOf,
  prefix = "",
  label,
}: {
  items: readonly FacetCount[];
  selected: string;
  hrefOf: (value: string) => string;
  // Shown before each name ("#" for tags).
  prefix?: string;
  label: string;
}) {
  const roots = buildTree(items);
  return (
    <ul className="facet-tree" aria-label={label}>
      {roots.map((node) => (
        <Branch key={node.value} node={node} selected={selected} hrefOf={hrefOf} prefix={prefix} />
      ))}
    </ul>
  );
}
