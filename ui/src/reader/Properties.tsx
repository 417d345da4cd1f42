// A note's front matter as Obsidian's properties: one row per key, lists as chips, tags as links to their notes.
import { Link } from "react-router";
import { tagUrl } from "../routes";

function values(value: unknown): string[] {
  if (value === null || value === undefined) return [];
  if (Array.isArray(value)) return value.flatMap(values);
  if (typeof value === "object") return [JSON.stringify(value)];
  return [String(value)];
}

export function Properties({ json }: { json: string }) {
  let parsed: Record<string, unknown> = {};
  try {
    const value: unknown = JSON.parse(json || "{}");
    if (value && typeof value === "object" && !Array.isArray(value)) parsed = value as Record<string, unknown>;
  } catch {
    return null; // the service writes JSON; anything else is not shown rather than shown wrong
  }
  const keys = Object.keys(parsed);
  if (!keys.length) return null;
  return (
    <details className="properties" open>
      <summary>Properties</summary>
      <dl>
        {keys.map((key) => {
          const shown = values(parsed[key]);
          const isTags = key === "tags" || key === "tag";
          return (
            <div key={key} className="property">
              <dt>{key}</dt>
              <dd>
                {shown.length === 0 ? <span className="muted">empty</span> : null}
                {shown.map((value, i) =>
                  isTags ? (
                    <Link key={i} className="tag-link" to={tagUrl(value)}>
                      #{value.replace(/^#/, "")}
                    </Link>
                  ) : (
                    <span key={i} className={shown.length > 1 ? "property-chip" : undefined}>
                      {value}
                    </span>
                  ),
                )}
              </dd>
            </div>
          );
        })}
      </dl>
    </details>
  );
}
