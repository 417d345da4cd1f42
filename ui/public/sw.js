// secondbrain's service worker: it keeps the APP SHELL (index.html, the built scripts and styles, the icons, the
// manifest) so the app opens, and says the server cannot be reached, when the server cannot be. It never keeps what
// the server answers: no grpc-web call, nothing under /api/, /mcp or /v1/, so no note's text and no answer is ever
// in a cache. (Offline reading of notes would be a feature of its own, asking for it.)
//
// The build (ui/vite.config.ts, the `shell-manifest` plugin) replaces SHELL below with the files it emitted and
// VERSION with a hash of their contents: a new build is a new worker, which caches its own shell and deletes the old one.
const VERSION = "__SECONDBRAIN_SHELL_VERSION__";
const SHELL = ["__SECONDBRAIN_SHELL_FILES__"];
const PREFIX = "secondbrain-shell-";
const CACHE = PREFIX + VERSION;
// The page every navigation falls back to offline: the router in the app reads the address itself.
const INDEX = "/index.html";
// A navigation waits this long for the server before the cached shell is shown (a phone off its network may wait
// a minute for a connection that never comes).
const NAVIGATION_TIMEOUT_MS = 6000;
// What is the server's to answer, always from the network.
const NEVER_CACHED = [/^\/secondbrain\./, /^\/grpc\./, /^\/api\//, /^\/mcp(\/|$)/, /^\/v1\//, /^\/healthz$/, /^\/metrics$/];

// A new build's worker waits until no page of the old build is open (no skipWaiting): an old page still asks for
// the old build's lazily loaded scripts, which only the old worker's cache still has.
self.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      // Each file fresh from the server, not from the browser's HTTP cache.
      .then((cache) => cache.addAll(SHELL.map((path) => new Request(path, { cache: "reload" })))),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((name) => name.startsWith(PREFIX) && name !== CACHE).map((name) => caches.delete(name))))
      .then(() => self.clients.claim()),
  );
});

// Statuses of a gateway whose backend is away (Envoy's "no healthy upstream", a proxy's timeout): the app, from its
// shell, says so in words instead.
const SERVER_AWAY = [502, 503, 504];

async function fromNetworkElseShell(request) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), NAVIGATION_TIMEOUT_MS);
  try {
    const response = await fetch(request, { signal: controller.signal });
    if (!SERVER_AWAY.includes(response.status)) return response;
    return (await caches.match(INDEX, { cacheName: CACHE })) ?? response;
  } catch (error) {
    const shell = await caches.match(INDEX, { cacheName: CACHE });
    if (shell) return shell;
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

async function fromShellElseNetwork(request) {
  const cached = await caches.match(request, { cacheName: CACHE });
  return cached ?? fetch(request);
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin || NEVER_CACHED.some((pattern) => pattern.test(url.pathname))) return;
  if (request.mode === "navigate") {
    // Network first, so a page is always the server's latest; the cached shell only when the server is away.
    event.respondWith(fromNetworkElseShell(request));
  } else if (SHELL.includes(url.pathname)) {
    // The shell's files are named by their content hash: what is cached is what the server would send.
    event.respondWith(fromShellElseNetwork(request));
  }
  // Anything else (an attachment the reader shows, say) goes to the network, uncached.
});
