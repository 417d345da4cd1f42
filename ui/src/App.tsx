// The page: a header with search and index links and, at the right, the speech-bubble button that opens the
// chat panel over everything. The panel (and the markdown renderer it brings) is loaded when first opened.
import { lazy, Suspense, useEffect, useState } from "react";
import { saveToken, savedToken } from "./api";
import { SearchPage } from "./pages/SearchPage";
import { StatusPage } from "./pages/StatusPage";

const ChatPanel = lazy(() => import("./chat/ChatPanel").then((module) => ({ default: module.ChatPanel })));

function useHashRoute(): string {
  const [route, setRoute] = useState(window.location.hash.replace(/^#\/?/, ""));
  useEffect(() => {
    const onChange = () => setRoute(window.location.hash.replace(/^#\/?/, ""));
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}

function TokenPrompt({ onDone }: { onDone: () => void }) {
  const [token, setToken] = useState(savedToken());
  return (
    <div className="modal-backdrop">
      <form
        className="modal"
        aria-label="API token"
        onSubmit={(e) => {
          e.preventDefault();
          saveToken(token.trim());
          onDone();
        }}
      >
        <h2>API token</h2>
        <p>This server asks for its API token (SECONDBRAIN_API_TOKEN). It is kept in this browser only.</p>
        <input type="password" aria-label="Token" value={token} onChange={(e) => setToken(e.target.value)} />
        <div className="actions">
          <button type="submit" className="primary">
            Save
          </button>
        </div>
      </form>
    </div>
  );
}

function SpeechBubble() {
  return (
    <svg viewBox="0 0 24 24" width="22" height="22" aria-hidden="true">
      <path
        fill="currentColor"
        d="M4 3h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4H4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2z"
      />
    </svg>
  );
}

export function App() {
  const route = useHashRoute();
  const [chatOpen, setChatOpen] = useState(false);
  const [askToken, setAskToken] = useState(false);
  // Remounting the panel after a token is entered reloads everything with it.
  const [generation, setGeneration] = useState(0);

  return (
    <>
      <header className="app-header">
        <a className="brand" href="#/">
          secondbrain
        </a>
        <nav>
          <a href="#/" className={route === "" ? "current" : ""}>
            Search
          </a>
          <a href="#/status" className={route === "status" ? "current" : ""}>
            Index
          </a>
        </nav>
        <span className="spacer" />
        <button className="chat-button" aria-label="Open chat" title="Ask your notes" onClick={() => setChatOpen(true)}>
          <SpeechBubble />
        </button>
      </header>
      <main key={generation}>{route === "status" ? <StatusPage /> : <SearchPage />}</main>
      {chatOpen ? (
        <Suspense fallback={null}>
          <ChatPanel key={generation} onClose={() => setChatOpen(false)} onUnauthenticated={() => setAskToken(true)} />
        </Suspense>
      ) : null}
      {askToken ? (
        <TokenPrompt
          onDone={() => {
            setAskToken(false);
            setGeneration(generation + 1);
          }}
        />
      ) : null}
    </>
  );
}
