// The offline screen: when the server cannot be reached (this device offline, or the gateway not answering), a notice
// says so and what to do, over a shell that stays usable (its pages, the header); it clears itself once the server
// answers again.
import { RETRY_SECONDS, type ReachabilityState } from "./connection";
import "./pwa.css";

export function ConnectionNotice({ reachability }: { reachability: ReachabilityState }) {
  const { state, online, checking, retry } = reachability;
  if (state !== "unreachable") return null;
  const host = window.location.host;
  return (
    <section className="pwa-notice pwa-offline" role="alert" aria-labelledby="pwa-offline-title">
      <h2 id="pwa-offline-title">Can’t reach the secondbrain server</h2>
      {online ? (
        <p>
          The server at {host} does not answer. Check that it is running (<code>secondbrain up</code>, or the
          gateway on your cluster) and that this device can reach it.
        </p>
      ) : (
        <p>This device is offline. Your notes and answers are on the server: connect to a network to reach them.</p>
      )}
      <p className="pwa-notice-actions">
        <span className="muted">Trying again every {RETRY_SECONDS} s.</span>
        <button type="button" onClick={retry} disabled={checking}>
          {checking ? "Trying…" : "Try again"}
        </button>
      </p>
    </section>
  );
}
