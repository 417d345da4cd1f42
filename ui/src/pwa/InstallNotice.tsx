// Installing the app: over plain HTTP from another machine no browser installs a web app, so a one-line notice says
// why (until dismissed); where the browser offers to install, a button shows its prompt.
import { useState } from "react";
import { useInstallability } from "./install";
import "./pwa.css";

const DISMISSED_KEY = "secondbrain.installNotice.dismissed";

function dismissed(kind: string): boolean {
  try {
    return localStorage.getItem(DISMISSED_KEY) === kind;
  } catch {
    return false;
  }
}

export function InstallNotice() {
  const installability = useInstallability();
  const [hidden, setHidden] = useState<string | null>(null);
  const kind = installability.kind;
  if (kind === "installed" || kind === "quiet" || hidden === kind || dismissed(kind)) return null;
  const dismiss = () => {
    try {
      localStorage.setItem(DISMISSED_KEY, kind);
    } catch {
      // Private mode: hidden for this visit only.
    }
    setHidden(kind);
  };
  if (installability.kind === "needs-https") {
    return (
      <aside className="pwa-notice pwa-install" aria-label="Installing the app">
        <p>
          Installing secondbrain as an app needs HTTPS; see <code>docs/deploy.md</code>.
        </p>
        <button type="button" onClick={dismiss}>
          Dismiss
        </button>
      </aside>
    );
  }
  const { prompt } = installability;
  return (
    <aside className="pwa-notice pwa-install" aria-label="Installing the app">
      <p>Install secondbrain as an app on this device.</p>
      <span className="pwa-install-actions">
        <button type="button" className="primary" onClick={() => void prompt()}>
          Install
        </button>
        <button type="button" onClick={dismiss}>
          Not now
        </button>
      </span>
    </aside>
  );
}
