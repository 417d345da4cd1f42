// What makes the web UI an installable app: the service worker's registration, and the notices mounted beside the
// app (main.tsx): the server cannot be reached; installing needs HTTPS, or the browser's install prompt.
import { useReachability } from "./connection";
import { ConnectionNotice } from "./ConnectionNotice";
import { InstallNotice } from "./InstallNotice";

export { ConnectionNotice } from "./ConnectionNotice";
export { InstallNotice } from "./InstallNotice";
export { registerServiceWorker } from "./register";

// The notices, stacked at the bottom of the screen, above the home bar. While the server cannot be reached, that is
// the one thing said: an offer to install can wait.
export function AppNotices() {
  const reachability = useReachability();
  return (
    <div className="pwa-dock">
      <ConnectionNotice reachability={reachability} />
      {reachability.state === "unreachable" ? null : <InstallNotice />}
    </div>
  );
}
