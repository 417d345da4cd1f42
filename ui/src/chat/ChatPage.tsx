// The chat, a page to live in, at /chat/<id> (that conversation: a reload returns to it, back and forward move
// between conversations) and /chat (the conversation you were last in, or a new one; a new one gets its address as
// soon as its first question makes it); /chat?about=<path> starts one scoped to that note and the notes it links
// to (useRoutedConversation). Conversations on the left (a drawer below 700 px), the conversation in the centre, the
// passage a citation opens on the right. Escape closes the topmost of the settings, the passage and the drawer.
import { useCallback, useEffect, useRef, useState } from "react";
import { useNavigate } from "react-router";
import { chat, describeError, isUnauthenticated } from "../api";
import { MessageRole, type Passage } from "../gen/secondbrain/v1/retrieval_pb";
import { preloadMarkdown } from "../LazyMarkdown";
import { chatUrl } from "../routes";
import { isStoppedMessage } from "./Answer";
import { ChatHeader } from "./ChatHeader";
import { Composer } from "./Composer";
import { ConversationList } from "./ConversationList";
import { ConversationView } from "./ConversationView";
import { forgetConversation, rememberScope } from "./memory";
import { PassagePanel } from "./PassagePanel";
import { noteName } from "../notePaths";
import { notesInScope } from "./scope";
import { SettingsModal } from "./SettingsModal";
import { useChatSetup } from "./useChatSetup";
import { useConversationActions } from "./useConversationActions";
import { useConversationList } from "./useConversationList";
import { useRoutedConversation } from "./useRoutedConversation";
import { settled, useTurn } from "./useTurn";
import "./chat.css";

export function ChatPage({ onUnauthenticated }: { onUnauthenticated: () => void }) {
  const navigate = useNavigate();
  const [error, setError] = useState("");
  // The answers' renderer, once the page is drawn (an empty conversation does not wait for it).
  useEffect(preloadMarkdown, []);
  const fail = useCallback(
    (e: unknown) => {
      if (isUnauthenticated(e)) onUnauthenticated();
      setError(describeError(e));
    },
    [onUnauthenticated],
  );
  const { options, settings, setSettings, vaultName, strictLineBreaks } = useChatSetup(fail);
  const list = useConversationList(fail);
  const turn = useTurn(onUnauthenticated);
  const [freshPersona, setFreshPersona] = useState<string>();
  // The persona a new conversation keeps when the one made for a refused first question is taken away again.
  const keptPersona = useRef<string>(undefined);
  const [draft, setDraft] = useState("");
  const [passage, setPassage] = useState<Passage>();
  const [settingsOpen, setSettingsOpen] = useState(false);
  const [drawerOpen, setDrawerOpen] = useState(false);
  // The composer's agent toggle; unset follows the settings' mode.
  const [agentChoice, setAgentChoice] = useState<boolean>();
  const composer = useRef<HTMLTextAreaElement>(null);
  const searchBox = useRef<HTMLInputElement>(null);
  const drawerToggle = useRef<HTMLButtonElement>(null);

  const routed = useRoutedConversation(fail, (fresh) => {
    setPassage(undefined);
    if (!fresh) return;
    setFreshPersona(keptPersona.current);
    keptPersona.current = undefined;
    composer.current?.focus(); // a new conversation: straight to the question
  });
  const { active, setActive, activeRef, scopePath } = routed;
  const actions = useConversationActions({
    activeRef,
    setActive,
    refresh: list.refresh,
    fail,
    setError,
    onUnauthenticated,
    afterDelete: () => searchBox.current?.focus(), // its buttons are gone: focus stays in the list
  });

  const closeDrawer = useCallback(() => {
    setDrawerOpen(false);
    drawerToggle.current?.focus();
  }, []);
  useEffect(() => {
    if (drawerOpen) document.querySelector<HTMLElement>("#conversations button")?.focus();
  }, [drawerOpen]);

  useEffect(() => {
    function onKey(event: KeyboardEvent) {
      if (event.key !== "Escape" || event.defaultPrevented) return;
      if (settingsOpen) setSettingsOpen(false);
      else if (passage) setPassage(undefined);
      else if (drawerOpen) closeDrawer();
      else return;
      event.preventDefault();
    }
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [settingsOpen, passage, drawerOpen, closeDrawer]);

  // A conversation without a persona of its own has the default assistant, the first of the options.
  const personaId =
    (active ? active.personaId : (freshPersona ?? settings?.personaId)) || options?.personas[0]?.id || "";
  const agentOn = agentChoice ?? settings?.mode === "agent";
  const personaName = options?.personas.find((p) => p.id === personaId)?.name ?? "Assistant";
  // A turn still streaming in a conversation you left is shown there, not here.
  const live = turn.live && turn.live.conversationId === active?.id ? turn.live : undefined;

  async function ask(question: string) {
    if (turn.live) return;
    setError("");
    // Said before anything is made: the service's own limit (it still checks, and its refusal is the truth).
    const length = [...question].length; // code points, as the service counts
    const limit = options?.maxQuestionChars ?? 0;
    if (limit && length > limit) {
      setError(
        `Your question is ${length.toLocaleString()} characters long; a question can be at most ` +
          `${limit.toLocaleString()}. Shorten it, or ask about one part at a time.`,
      );
      composer.current?.focus();
      return;
    }
    setDraft("");
    setPassage(undefined);
    const scope = scopePath;
    const startedIn = activeRef.current?.id;
    const chosenPersona = freshPersona;
    const ended = await turn.run({
      question,
      mode: settings ? (agentOn ? "agent" : "rag") : "", // "": the settings' mode
      conversationId: async () => {
        if (startedIn) return startedIn;
        const created = (await chat.createConversation({ personaId })).conversation!;
        if (scope) rememberScope(created.id, scope);
        activeRef.current = created;
        setActive(created);
        navigate(chatUrl(created.id), { replace: true });
        return created.id;
      },
      // A new conversation is in the list as soon as its question is stored.
      onStored: startedIn ? undefined : () => void list.refresh(),
      filters: scope ? async () => ({ notes: await notesInScope(scope) }) : undefined,
    });
    const shownError = ended.error && !isStoppedMessage(ended.error) ? ended.error : undefined;
    if (ended.refused) {
      // Nothing was stored: the question goes back in the composer (unless something new is being written), and
      // the conversation made for it, still empty, is taken away again.
      setDraft((current) => current || question);
      if (!startedIn && ended.conversationId) await unmake(ended.conversationId, chosenPersona);
      setError(shownError ?? "");
      turn.finish();
      composer.current?.focus();
      return;
    }
    if (ended.conversationId) {
      try {
        const conversation = await settled(ended.conversationId);
        if (routed.routeRef.current === ended.conversationId) setActive(conversation);
        if (shownError && conversation?.messages.at(-1)?.role !== MessageRole.ASSISTANT) setError(shownError);
      } catch (e) {
        fail(e);
        if (shownError) setError(shownError);
      }
      void list.refresh();
    } else if (shownError) {
      setDraft((current) => current || question); // no conversation could be made: the question is still to ask
      setError(shownError);
    }
    turn.finish();
  }

  // The empty conversation a refused first question made: deleted, and the page a new conversation again (its
  // persona and scope as they were).
  async function unmake(id: string, persona: string | undefined) {
    try {
      await chat.deleteConversation({ id });
    } catch (e) {
      fail(e);
      return;
    }
    forgetConversation(id);
    // The address the first question moved to may not have been rendered yet (the ref follows renders): the
    // browser's own address says where the page is.
    if (routed.routeRef.current === id || window.location.pathname === chatUrl(id)) {
      keptPersona.current = persona;
      const about = scopePath;
      navigate(about ? chatUrl(undefined, about) : chatUrl(), { replace: true, state: { fresh: true } });
    }
    void list.refresh();
  }

  function removeScope() {
    if (active) rememberScope(active.id, undefined);
    routed.setScopePath(undefined);
    if (!routed.routeId && routed.about) navigate(chatUrl(), { replace: true, state: { fresh: true } });
    composer.current?.focus();
  }

  const title = active?.title || live?.question || (scopePath ? `About ${noteName(scopePath)}` : "New conversation");
  if (routed.returnTo) return <div className="chat-page" />;
  return (
    <div className={`chat-page${drawerOpen ? " drawer-open" : ""}`}>
      {drawerOpen ? <div className="drawer-backdrop" onClick={closeDrawer} /> : null}
      <ConversationList
        conversations={list.conversations}
        activeId={active?.id}
        query={list.query}
        shownQuery={list.shownQuery}
        searching={list.searching}
        searchBox={searchBox}
        onQuery={list.setQuery}
        onNew={() => {
          setDrawerOpen(false);
          navigate(chatUrl(), { state: { fresh: true } });
        }}
        onOpen={() => {
          if (!drawerOpen) return;
          setDrawerOpen(false);
          composer.current?.focus();
        }}
        onRename={actions.rename}
        onExport={actions.exportConversation}
        onDelete={actions.remove}
      />
      <section className="conversation" aria-labelledby="chat-title">
        <ChatHeader
          title={title}
          options={options}
          settings={settings}
          personaId={personaId}
          drawerOpen={drawerOpen}
          canExport={!!active && (active.messages.length > 0 || active.messageCount > 0)}
          drawerToggle={drawerToggle}
          onToggleDrawer={() => (drawerOpen ? closeDrawer() : setDrawerOpen(true))}
          onPersona={(id) => (active ? void actions.choosePersona(id) : setFreshPersona(id))}
          onSettings={() => setSettingsOpen(true)}
          onExport={() => active && void actions.exportConversation(active)}
        />
        <ConversationView
          conversation={active}
          live={live}
          busy={turn.busy}
          missing={routed.missing}
          personaName={personaName}
          scopePath={scopePath}
          onCite={setPassage}
          onAsk={(question) => void ask(question)}
        />
        {error ? (
          <div className="error banner" role="alert">
            {error}
          </div>
        ) : null}
        <Composer
          textarea={composer}
          scope={scopePath ? { path: scopePath, linked: routed.linked } : undefined}
          agentOn={agentOn}
          agentAvailable={!!settings}
          busy={turn.busy && !!live}
          blocked={!!turn.live}
          draft={draft}
          onDraft={setDraft}
          onRemoveScope={removeScope}
          onAgent={setAgentChoice}
          onSend={(question) => void ask(question)}
          onStop={turn.stop}
        />
      </section>
      {passage ? (
        <PassagePanel
          key={passage.number}
          passage={passage}
          vaultName={vaultName}
          joinLines={strictLineBreaks}
          onClose={() => setPassage(undefined)}
        />
      ) : null}
      {settingsOpen && options && settings ? (
        <SettingsModal
          options={options}
          settings={settings}
          onSaved={(saved) => {
            // The persona just saved is the one the header shows: a new conversation's (over a choice made in the
            // header before), and the open conversation's, which takes it from its next answer.
            if (saved.personaId !== settings.personaId) {
              setFreshPersona(undefined);
              if (active && active.personaId !== saved.personaId) void actions.choosePersona(saved.personaId);
            }
            setSettings(saved);
            setAgentChoice(undefined);
          }}
          onClose={() => setSettingsOpen(false)}
        />
      ) : null}
    </div>
  );
}
