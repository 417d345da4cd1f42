// The service worker (public/sw.js, its shell list written by the build) is registered in a production build only,
// and only where the browser allows one: a secure context (HTTPS, or this machine's own localhost). In
// development Vite serves unhashed modules that a cached shell would only get in the way of.
export const SERVICE_WORKER_URL = "/sw.js";

export function registerServiceWorker(): void {
  if (!import.meta.env.PROD || !window.isSecureContext || !("serviceWorker" in navigator)) return;
  const register = () => {
    navigator.serviceWorker
      .register(SERVICE_WORKER_URL, { scope: "/", updateViaCache: "none" })
      // No worker is no offline shell, nothing more: the app works as before.
      .catch((error: unknown) => console.warn("secondbrain: the service worker was not registered:", error));
  };
  // After the page's own loading, so the worker's precache never competes with the first paint.
  if (document.readyState === "complete") register();
  else window.addEventListener("load", register, { once: true });
}
