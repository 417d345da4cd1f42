// What the index says of itself (counts, the vault, how fresh it is), read once and shared by every page that needs
// it (the reader's line breaks and "Open in Obsidian", the header's freshness), refreshed every FRESHNESS_MS.
import { useEffect, useState } from "react";
import { ingest } from "./api";
import type { GetIndexStatusResponse } from "./gen/secondbrain/ingest/v1/ingest_service_pb";
import { vaultNameOf } from "./notePaths";

const FRESHNESS_MS = 30_000;
let latest: Promise<GetIndexStatusResponse> | undefined;
let readAt = 0;

export function readIndexStatus(): Promise<GetIndexStatusResponse> {
  if (!latest || Date.now() - readAt > FRESHNESS_MS) {
    readAt = Date.now();
    latest = ingest.getIndexStatus({});
    latest.catch(() => {
      latest = undefined; // a failure is not remembered: the next caller asks again
    });
  }
  return latest;
}

// The index's status, or undefined until it is read (and when it cannot be: the pages say why themselves).
export function useIndexStatus(poll = false): GetIndexStatusResponse | undefined {
  const [status, setStatus] = useState<GetIndexStatusResponse>();
  useEffect(() => {
    let live = true;
    const read = () =>
      readIndexStatus().then(
        (value) => live && setStatus(value),
        () => undefined,
      );
    void read();
    const timer = poll ? setInterval(read, FRESHNESS_MS) : undefined;
    return () => {
      live = false;
      if (timer) clearInterval(timer);
    };
  }, [poll]);
  return status;
}

// The vault's name as Obsidian knows it, "" before the first sync.
export function vaultName(status: GetIndexStatusResponse | undefined): string {
  return status ? vaultNameOf(status.vaultPath) : "";
}
