// Whether the secondbrain server answers: the gateway's /healthz (Envoy passes it to the shim, so an answer means the
// whole HTTP path is up), asked at start, whenever the browser says its connection changed or the page comes back
// into view, and on a timer: often while the server is away, so the notice clears soon after it is back.
import { useCallback, useEffect, useRef, useState } from "react";

const BASE = import.meta.env.VITE_GATEWAY_URL ?? window.location.origin;
export const HEALTH_URL = `${BASE}/healthz`;
const PROBE_TIMEOUT_MS = 5000;
export const RETRY_SECONDS = 15;
const WHILE_UP_SECONDS = 60;

export type Reachability = "unknown" | "reachable" | "unreachable";

async function probe(): Promise<boolean> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), PROBE_TIMEOUT_MS);
  try {
    // no-store: never an answer the browser kept. (The service worker never answers /healthz either.)
    const response = await fetch(HEALTH_URL, { cache: "no-store", signal: controller.signal });
    return response.ok;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

export interface ReachabilityState {
  state: Reachability;
  // What the browser says of its network: false is this device offline, true with "unreachable" the server away.
  online: boolean;
  checking: boolean;
  retry: () => void;
}

export function useReachability(): ReachabilityState {
  const [state, setState] = useState<Reachability>("unknown");
  const [online, setOnline] = useState(navigator.onLine);
  const [checking, setChecking] = useState(false);
  const running = useRef(false);

  const check = useCallback(async () => {
    if (running.current) return;
    running.current = true;
    setChecking(true);
    const answered = await probe();
    running.current = false;
    setChecking(false);
    setOnline(navigator.onLine);
    setState(answered ? "reachable" : "unreachable");
  }, []);

  useEffect(() => {
    void check();
    const whenVisible = () => {
      if (document.visibilityState === "visible") void check();
    };
    const changed = () => {
      setOnline(navigator.onLine);
      void check();
    };
    window.addEventListener("online", changed);
    window.addEventListener("offline", changed);
    document.addEventListener("visibilitychange", whenVisible);
    return () => {
      window.removeEventListener("online", changed);
      window.removeEventListener("offline", changed);
      document.removeEventListener("visibilitychange", whenVisible);
    };
  }, [check]);

  useEffect(() => {
    const seconds = state === "unreachable" ? RETRY_SECONDS : WHILE_UP_SECONDS;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") void check();
    }, seconds * 1000);
    return () => clearInterval(timer);
  }, [state, check]);

  return { state, online, checking, retry: () => void check() };
}
