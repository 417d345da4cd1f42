// The service worker (public/sw.js, its shell list written by the build) is registered in a production build only,
// and only where the browser allows one: a secure context (HTTPS, or this machine's own localhost). In
// development Vite serves unhashed modules that a cached shell would only get in the way of.
export const SERVICE_WORKER_URL = "/sw.js";
// Its install fetches and caches the whole shell (about half a megabyte of scripts): a while after the page has
// loaded, when the browser is idle, so a phone's first visit never waits on it (on Lighthouse's mobile profile,
// registering at load added some 150 ms of blocking time).
const AFTER_LOAD_MS = 3000;
const IDLE_TIMEOUT_MS = 5000;

export function registerServiceWorker(): void {
  if (!import.meta.env.PROD || !window.isSecureContext || !("serviceWorker" in navigator)) return;
  const register = () => {
    navigator.serviceWorker
      .register(SERVICE_WORKER_URL, { scope: "/", updateViaCache: "none" })
      // No worker is no offline shell, nothing more: the app works as before.
      .catch((error: unknown) => console.warn("secondbrain: the service worker was not registered:", error));
  };
  const whenIdle = () =>
    setTimeout(() => {
      if ("requestIdleCallback" in window) window.requestIdleCallback(register, { timeout: IDLE_TIMEOUT_MS });
      else register();
    }, AFTER_LOAD_MS);
  if (document.readyState === "complete") whenIdle();
  else window.addEventListener("load", whenIdle, { once: true });
}
