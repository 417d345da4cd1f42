// Whether this page can be installed as an app, and the browser's install prompt when it can.
import { useEffect, useState } from "react";

// Chromium's event, not in TypeScript's DOM library.
export interface BeforeInstallPromptEvent extends Event {
  prompt(): Promise<void>;
  readonly userChoice: Promise<{ outcome: "accepted" | "dismissed"; platform: string }>;
}

export type Installability =
  // Opened as the installed app already.
  | { kind: "installed" }
  // Plain HTTP from another machine: no browser installs that, and no service worker runs.
  | { kind: "needs-https" }
  // The browser offers to install: `prompt` shows its dialog.
  | { kind: "offered"; prompt: () => Promise<boolean> }
  // A secure page the browser has not (yet) offered to install, or one that installs from its own menu (Safari).
  | { kind: "quiet" };

// The event may fire before React has mounted: kept from the moment this module loads.
let deferred: BeforeInstallPromptEvent | null = null;
const listeners = new Set<() => void>();
window.addEventListener("beforeinstallprompt", (event) => {
  // Kept for the app's own button instead of the browser's mini bar.
  event.preventDefault();
  deferred = event as BeforeInstallPromptEvent;
  listeners.forEach((listener) => listener());
});
window.addEventListener("appinstalled", () => {
  deferred = null;
  listeners.forEach((listener) => listener());
});

function standalone(): boolean {
  return (
    window.matchMedia("(display-mode: standalone)").matches ||
    (navigator as Navigator & { standalone?: boolean }).standalone === true
  );
}

function current(): Installability {
  if (standalone()) return { kind: "installed" };
  if (!window.isSecureContext) return { kind: "needs-https" };
  const event = deferred;
  if (event) {
    return {
      kind: "offered",
      prompt: async () => {
        await event.prompt();
        const choice = await event.userChoice;
        // A prompt can be shown once; the browser fires a new event if it offers again.
        deferred = null;
        listeners.forEach((listener) => listener());
        return choice.outcome === "accepted";
      },
    };
  }
  return { kind: "quiet" };
}

export function useInstallability(): Installability {
  const [state, setState] = useState<Installability>(current);
  useEffect(() => {
    const update = () => setState(current());
    listeners.add(update);
    update();
    return () => {
      listeners.delete(update);
    };
  }, []);
  return state;
}
