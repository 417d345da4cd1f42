// How fresh the index is, on the header's Index link: whether ingest is watching the vault, how many changes it has
// not taken in yet, and when it last took one in. The index page says more.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { useEffect, useState } from "react";
import { NavLink } from "react-router";
import type { GetIndexStatusResponse } from "./gen/secondbrain/ingest/v1/ingest_service_pb";
import { useIndexStatus } from "./indexStatus";
import { statusUrl } from "./routes";

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["day", 86_400],
  ["hour", 3_600],
  ["minute", 60],
];

// "just now", "5 minutes ago", "yesterday".
export function ago(when: Date, now = new Date()): string {
  const seconds = Math.round((now.getTime() - when.getTime()) / 1000);
  if (seconds < 45) return "just now";
  const words = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  for (const [unit, size] of UNITS) {
    if (seconds >= size || unit === "minute") return words.format(-Math.max(1, Math.round(seconds / size)), unit);
  }
  return "just now";
}

export function freshness(status: GetIndexStatusResponse, now = new Date()): { state: string; words: string } {
  const changed = status.lastChange ?? status.lastSync;
  const when = changed ? ago(timestampDate(changed), now) : "";
  if (status.pendingChanges > 0) {
    const changes = status.pendingChanges === 1 ? "1 change" : `${status.pendingChanges} changes`;
    return { state: "pending", words: `${changes} to take in` };
  }
  if (!changed) return { state: "never", words: "Not indexed yet" };
  if (status.watching) return { state: "watching", words: `Up to date · ${when}` };
  return { state: "idle", words: `Synced ${when}; not watching the vault` };
}

function useFreshness(): { state: string; words: string } | undefined {
  const status = useIndexStatus(true);
  // Redrawn each minute, so "2 minutes ago" stays true between reads.
  const [now, setNow] = useState(() => new Date());
  useEffect(() => {
    const timer = setInterval(() => setNow(new Date()), 60_000);
    return () => clearInterval(timer);
  }, []);
  return status ? freshness(status, now) : undefined;
}

// The header's link to the index page, with a dot for how fresh it is (green: watching, amber: changes waiting,
// grey: not watching), said in words to a screen reader, and shown in words beside it on a wide screen.
export function IndexLink() {
  const fresh = useFreshness();
  return (
    <NavLink to={statusUrl} className={({ isActive }) => `index-link${isActive ? " current" : ""}`}>
      Index
      {fresh ? (
        <>
          <span className={`dot ${fresh.state}`} aria-hidden="true" />
          <span className="visually-hidden">, {fresh.words}</span>
          <span className="freshness-words" aria-hidden="true">
            {fresh.words}
          </span>
        </>
      ) : null}
    </NavLink>
  );
}
