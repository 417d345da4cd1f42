// What the index holds: counts, the embedding model, the last sync, and every file that is not indexed and why.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { useEffect, useState } from "react";
import { describeError, ingest } from "../api";
import { FileState, type GetIndexStatusResponse } from "../gen/secondbrain/ingest/v1/ingest_service_pb";

const STATE_NAMES: Record<number, string> = {
  [FileState.INDEXED]: "indexed",
  [FileState.PENDING]: "not embedded yet",
  [FileState.FAILED]: "failed",
};

export function StatusPage() {
  const [status, setStatus] = useState<GetIndexStatusResponse>();
  const [error, setError] = useState("");

  useEffect(() => {
    ingest
      .getIndexStatus({ includeFiles: true })
      .then(setStatus)
      .catch((e) => setError(describeError(e)));
  }, []);

  if (error) {
    return (
      <section className="page">
        <h1>Index</h1>
        <div className="error" role="alert">
          {error}
        </div>
      </section>
    );
  }
  if (!status) return <section className="page">Loading…</section>;
  const notIndexed = status.files.filter((f) => f.state !== FileState.INDEXED);
  return (
    <section className="page status-page">
      <h1>Index</h1>
      <table className="counts">
        <tbody>
          <tr>
            <th>Notes</th>
            <td data-testid="notes">{status.notes}</td>
          </tr>
          <tr>
            <th>Chunks</th>
            <td>
              {status.chunks} ({status.embeddedChunks} embedded)
            </td>
          </tr>
          <tr>
            <th>Failed notes</th>
            <td>{status.failedNotes}</td>
          </tr>
          <tr>
            <th>Embedding model</th>
            <td>
              {status.embeddingModel
                ? `${status.embeddingModel.provider} · ${status.embeddingModel.name} (${status.embeddingModel.dimension}-d)`
                : "none yet: run a sync"}
            </td>
          </tr>
          <tr>
            <th>Last sync</th>
            <td>{status.lastSync ? timestampDate(status.lastSync).toLocaleString() : "never"}</td>
          </tr>
          <tr>
            <th>Watching the vault</th>
            <td data-testid="watching">
              {status.watching
                ? "yes: each change is indexed as it is saved"
                : "no: changes are indexed at the next sync (secondbrain up watches by default)"}
            </td>
          </tr>
          <tr>
            <th>Changes waiting</th>
            <td data-testid="pending">{status.pendingChanges}</td>
          </tr>
          <tr>
            <th>Last change taken in</th>
            <td>{status.lastChange ? timestampDate(status.lastChange).toLocaleString() : "none yet"}</td>
          </tr>
        </tbody>
      </table>
      <h2>Files not indexed</h2>
      {notIndexed.length ? (
        <table className="files">
          <thead>
            <tr>
              <th>File</th>
              <th>State</th>
              <th>Why</th>
            </tr>
          </thead>
          <tbody>
            {notIndexed.map((f) => (
              <tr key={f.path}>
                <td className="note-path">{f.path}</td>
                <td>{STATE_NAMES[f.state] ?? "unknown"}</td>
                <td>{f.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="muted">Every file is indexed.</p>
      )}
    </section>
  );
}
