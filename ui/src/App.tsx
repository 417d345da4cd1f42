// The page: a header with the places (search, browse, the index) and, at the right, the speech-bubble link to the
// chat; below it the route's page (routes.ts lists the addresses). The reader, browsing and the chat (and the
// markdown renderer they bring) are loaded when first visited.
import { lazy, Suspense, useState } from "react";
import { BrowserRouter, NavLink, Route, Routes } from "react-router";
import { saveToken, savedToken } from "./api";
import { IndexLink } from "./IndexFreshness";
import { SearchPage } from "./pages/SearchPage";
import { prefetchNote } from "./reader/noteLoad";
import { StatusPage } from "./pages/StatusPage";
import { browseUrl, chatUrl } from "./routes";

// A note opened by its address is read while the reader's script loads (reader/noteLoad.ts).
prefetchNote(window.location.pathname);

const ChatPage = lazy(() => import("./chat/ChatPage").then((module) => ({ default: module.ChatPage })));
const ReaderPage = lazy(() => import("./reader/ReaderPage").then((module) => ({ default: module.ReaderPage })));
const BrowsePage = lazy(() => import("./browse/BrowsePage").then((module) => ({ default: module.BrowsePage })));

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

function NotFoundPage() {
  return (
    <section className="page" aria-labelledby="not-found-title">
      <h1 id="not-found-title">Nothing here</h1>
      <p>
        This address is not a page of secondbrain. <NavLink to="/">Search your notes</NavLink> or{" "}
        <NavLink to={browseUrl()}>browse them</NavLink>.
      </p>
    </section>
  );
}

export function App() {
  const [askToken, setAskToken] = useState(false);
  // Remounting the pages after a token is entered reloads everything with it.
  const [generation, setGeneration] = useState(0);
  const unauthenticated = () => setAskToken(true);

  return (
    <BrowserRouter>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="app-header">
        <NavLink className="brand" to="/">
          secondbrain
        </NavLink>
        <nav aria-label="Main">
          <NavLink to="/" end className={({ isActive }) => (isActive ? "current" : "")}>
            Search
          </NavLink>
          <NavLink to={browseUrl()} className={({ isActive }) => (isActive ? "current" : "")}>
            Browse
          </NavLink>
          <IndexLink />
        </nav>
        <span className="spacer" />
        <NavLink className="chat-button" to={chatUrl()} aria-label="Open chat" title="Ask your notes">
          <SpeechBubble />
        </NavLink>
      </header>
      <main key={generation} id="main" tabIndex={-1}>
        <Suspense fallback={<p className="loading">Loading…</p>}>
          <Routes>
            <Route path="/" element={<SearchPage />} />
            <Route path="/note/*" element={<ReaderPage onUnauthenticated={unauthenticated} />} />
            <Route path="/browse" element={<BrowsePage onUnauthenticated={unauthenticated} />} />
            <Route path="/chat" element={<ChatPage onUnauthenticated={unauthenticated} />} />
            <Route path="/chat/:conversationId" element={<ChatPage onUnauthenticated={unauthenticated} />} />
            <Route path="/status" element={<StatusPage />} />
            <Route path="*" element={<NotFoundPage />} />
          </Routes>
        </Suspense>
      </main>
      {askToken ? (
        <TokenPrompt
          onDone={() => {
            setAskToken(false);
            setGeneration(generation + 1);
          }}
        />
      ) : null}
    </BrowserRouter>
  );
}
