// The full-screen chat panel: conversations on the left (a drawer behind a button on a narrow screen), the
// conversation in the centre with the answer streaming in, a persona dropdown and a model chip at the top, a gear for
// the settings. In agent mode (the settings' mode, or the composer's toggle for one turn) the tool steps stream in
// above the answer. Escape closes the topmost of the settings, the passage, the drawer and the panel itself (not with
// a question half typed).
import { useCallback, useEffect, useRef, useState } from "react";
import { chat, describeError, ingest, isAbort, isUnauthenticated } from "../api";
import {
  type Conversation,
  type GetOptionsResponse,
  MessageStatus,
  type Settings,
} from "../gen/secondbrain/chat/v1/chat_service_pb";
import { MessageRole, type Passage, type RetrievalResult } from "../gen/secondbrain/v1/retrieval_pb";
import { Answer, type AgentView, PassageView, isStoppedMessage, storedAgent } from "./Answer";
import { SettingsModal } from "./SettingsModal";

const SETTLE_WITHIN_MS = 5000;

// The conversation once its last answer is no longer pending: a stopped stream is recorded by the service a
// moment after the browser lets go of it.
async function settled(id: string): Promise<Conversation | undefined> {
  const deadline = Date.now() + SETTLE_WITHIN_MS;
  for (;;) {
    const conversation = (await chat.getConversation({ id })).conversation;
    const last = conversation?.messages.at(-1);
    if (last?.status !== MessageStatus.PENDING || Date.now() > deadline) return conversation;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

interface LiveTurn {
  question: string;
  sources?: RetrievalResult;
  text: string;
  error?: string;
  // The person pressed Stop.
  stopped?: boolean;
  agent?: AgentView;
}

// The vault's name as Obsidian knows it: the last part of the path the index was last synced from.
// The browser's clock in its own zone, ISO 8601 with the offset ("2026-11-30T18:00:00+01:00"): "yesterday" in a
// question is the asker's yesterday, wherever the server runs.
export function localNow(date = new Date()): string {
  const pad = (n: number) => String(Math.floor(Math.abs(n))).padStart(2, "0");
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}` +
    `T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}` +
    `${sign}${pad(offset / 60)}:${pad(offset % 60)}`
  );
}

function vaultNameOf(path: string): string {
  return path.replace(/[\\/]+$/, "").split(/[\\/]/).pop() ?? "";
}

// The turn's passages: the retrieval's, then those the tools added (numbered after them by the service).
function withToolPassages(turn: LiveTurn, added: Passage[]): LiveTurn {
  if (!turn.sources || !added.length) return turn;
  return { ...turn, sources: { ...turn.sources, passages: [...turn.sources.passages, ...added] } };
}

// The conversations (newest first) under the day each last changed: Today, Yesterday, a weekday this week, then a
// date, so look-alike titles are told apart by when they were (found by a user: a list of "What did we decide ab…").
function dayOf(conversation: Conversation): string {
  const seconds = Number(conversation.updateTime?.seconds ?? 0n);
  if (!seconds) return "Earlier";
  const when = new Date(seconds * 1000);
  const today = new Date();
  const days = Math.round(
    (new Date(today.getFullYear(), today.getMonth(), today.getDate()).getTime() -
      new Date(when.getFullYear(), when.getMonth(), when.getDate()).getTime()) /
      86_400_000,
  );
  if (days <= 0) return "Today";
  if (days === 1) return "Yesterday";
  if (days < 7) return when.toLocaleDateString(undefined, { weekday: "long" });
  const sameYear = when.getFullYear() === today.getFullYear();
  return when.toLocaleDateString(undefined, { day: "numeric", month: "long", year: sameYear ? undefined : "numeric" });
}

function byDay(conversations: Conversation[]): [string, Conversation[]][] {
  const groups: [string, Conversation[]][] = [];
  for (const conversation of conversations) {
    const day = dayOf(conversation);
    if (groups.length && groups[groups.length - 1][0] === day) groups[groups.length - 1][1].push(conversation);
    else groups.push([day, [conversation]]);
  }
  return groups;
}

function lastChanged(conversation: Conversation): string {
  const seconds = Number(conversation.updateTime?.seconds ?? 0n);
  const count = `${conversation.messageCount} message${conversation.messageCount === 1 ? "" : "s"}`;
  return seconds ? `${count}, last ${new Date(seconds * 1000).toLocaleString()}` : count;
}

// The model chip: the model's name as the presets give it (its provider's too, in full, on hover); the quoting
// provider, which has no model, in words.
function modelChip(settings: Settings, options: GetOptionsResponse | undefined): [string, string] {
  if (settings.provider === "extractive") return ["Quoting (no model)", "Answers quote your notes; no model is used"];
  const provider = options?.providers.find((p) => p.id === settings.provider);
  const model = provider?.models.find((m) => m.id === settings.model)?.displayName ?? settings.model;
  return [model, `${provider?.displayName ?? settings.provider} · ${model}`];
}

export function ChatPanel({ onClose, onUnauthenticated }: { onClose: () => void; onUnauthenticated: () => void }) {
  const [options, setOptions] = useState<GetOptionsResponse>();
  const [settings, setSettings] = useState<Settings>();
  const [conversations, setConversations] = useState<Conversation[]>([]);
  const [active, setActive] = useState<Conversation>();
  const [freshPersona, setFreshPersona] = useState<string>();
  const [live, setLive] = useState<LiveTurn>();
  const [draft, setDraft] = useState("");
  const [passage, setPassage] = useState<Passage>();
  const [settingsOpen, setSettingsOpen] = useState(false);
  const [renaming, setRenaming] = useState<string>();
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  // The composer's agent toggle; unset follows the settings' mode.
  const [agentChoice, setAgentChoice] = useState<boolean>();
  const [drawerOpen, setDrawerOpen] = useState(false);
  const [vaultName, setVaultName] = useState<string>();
  // The vault's Obsidian "Strict line breaks": a passage's hard-wrapped lines are joined, as Obsidian shows them.
  const [strictLineBreaks, setStrictLineBreaks] = useState(false);
  const abort = useRef<AbortController | undefined>(undefined);
  const bottom = useRef<HTMLDivElement>(null);

  const fail = useCallback(
    (e: unknown) => {
      if (isUnauthenticated(e)) onUnauthenticated();
      setError(describeError(e));
    },
    [onUnauthenticated],
  );

  const refreshList = useCallback(async () => {
    try {
      const reply = await chat.listConversations({ pageSize: 100 });
      setConversations(reply.conversations);
    } catch (e) {
      fail(e);
    }
  }, [fail]);

  useEffect(() => {
    (async () => {
      try {
        const [opts, current] = await Promise.all([chat.getOptions({}), chat.getSettings({})]);
        setOptions(opts);
        setSettings(current.settings);
      } catch (e) {
        fail(e);
      }
    })();
    void refreshList();
    // For "Open in Obsidian"; without it (no sync yet, the ingest service down) the link is left out.
    ingest
      .getIndexStatus({})
      .then((status) => {
        setVaultName(vaultNameOf(status.vaultPath) || undefined);
        setStrictLineBreaks(status.strictLineBreaks);
      })
      .catch(() => setVaultName(undefined));
  }, [fail, refreshList]);

  const closePassage = useCallback(() => setPassage(undefined), []);
  const chip = settings ? modelChip(settings, options) : ["…", "Model"];

  useEffect(() => {
    function onKey(event: KeyboardEvent) {
      if (event.key !== "Escape" || event.defaultPrevented) return;
      if (settingsOpen) setSettingsOpen(false);
      else if (passage) setPassage(undefined);
      else if (drawerOpen) setDrawerOpen(false);
      else if (!draft.trim()) onClose(); // the panel itself, last; never with a question half typed
      else return;
      event.preventDefault();
    }
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [settingsOpen, passage, drawerOpen, draft, onClose]);

  useEffect(() => {
    bottom.current?.scrollIntoView({ block: "end" });
  }, [live?.text, live?.agent?.steps.length, active?.messages.length]);

  async function open(id: string) {
    setError("");
    setPassage(undefined);
    setDrawerOpen(false);
    try {
      const reply = await chat.getConversation({ id });
      setActive(reply.conversation);
    } catch (e) {
      fail(e);
    }
  }

  function startFresh() {
    setDrawerOpen(false);
    setActive(undefined);
    setFreshPersona(undefined);
    setPassage(undefined);
    setError("");
  }

  const personaId = active ? active.personaId : (freshPersona ?? settings?.personaId ?? "");
  const agentOn = agentChoice ?? settings?.mode === "agent";

  async function choosePersona(id: string) {
    if (!active) {
      setFreshPersona(id);
      return;
    }
    try {
      const reply = await chat.updateConversation({ id: active.id, personaId: id, updateMask: { paths: ["persona_id"] } });
      if (reply.conversation) setActive({ ...active, personaId: reply.conversation.personaId });
    } catch (e) {
      fail(e);
    }
  }

  async function rename(conversation: Conversation, title: string) {
    setRenaming(undefined);
    if (!title.trim() || title === conversation.title) return;
    try {
      await chat.updateConversation({ id: conversation.id, title, updateMask: { paths: ["title"] } });
      if (active?.id === conversation.id) setActive({ ...active, title });
      await refreshList();
    } catch (e) {
      fail(e);
    }
  }

  async function remove(conversation: Conversation) {
    if (!window.confirm(`Delete “${conversation.title || "Untitled"}” and its messages?`)) return;
    try {
      await chat.deleteConversation({ id: conversation.id });
      if (active?.id === conversation.id) startFresh();
      await refreshList();
    } catch (e) {
      fail(e);
    }
  }

  async function send(event: React.FormEvent) {
    event.preventDefault();
    const question = draft.trim();
    if (!question || live) return;
    setError("");
    setDraft("");
    const controller = new AbortController();
    abort.current = controller;
    setBusy(true);
    let turn: LiveTurn = { question, text: "" };
    setLive(turn);
    let conversationId = active?.id;
    try {
      if (!conversationId) {
        const created = await chat.createConversation({ personaId });
        conversationId = created.conversation!.id;
        setActive(created.conversation);
      }
      const turnMode = settings ? (agentOn ? "agent" : "rag") : ""; // "": the settings' mode
      for await (const response of chat.sendMessage(
        { conversationId, content: question, mode: turnMode, now: localNow() },
        { signal: controller.signal },
      )) {
        const event = response.event;
        if (event.case === "sources") {
          const { retrieval, mode, modeReason } = event.value;
          turn = { ...turn, sources: retrieval, agent: { mode, modeReason, steps: [], stopReason: "" } };
        } else if (event.case === "toolCall" && turn.agent) {
          const { id, tool, arguments: args } = event.value;
          const step = { id, tool, arguments: args, summary: "", passageNumbers: [], error: "", running: true };
          turn = { ...turn, agent: { ...turn.agent, steps: [...turn.agent.steps, step] } };
        } else if (event.case === "toolResult" && turn.agent) {
          const { id, summary, passageNumbers, passages, error } = event.value;
          const at = turn.agent.steps.findIndex((s) => s.running && s.id === id);
          const steps = turn.agent.steps.map((s, i) =>
            i === at ? { ...s, summary, passageNumbers, error, running: false } : s,
          );
          turn = withToolPassages({ ...turn, agent: { ...turn.agent, steps } }, passages);
        } else if (event.case === "delta") turn = { ...turn, text: turn.text + event.value.text };
        else if (event.case === "done" && turn.agent) {
          turn = { ...turn, agent: { ...turn.agent, stopReason: event.value.agentStopReason } };
        } else if (event.case === "error") turn = { ...turn, error: event.value.message };
        setLive(turn);
      }
    } catch (e) {
      if (isAbort(e) || controller.signal.aborted) {
        turn = { ...turn, stopped: true };
      } else {
        if (isUnauthenticated(e)) onUnauthenticated();
        turn = { ...turn, error: describeError(e) };
      }
      setLive(turn);
    } finally {
      abort.current = undefined;
      setBusy(false);
    }
    // The stored conversation is the truth: the answer as the server kept it, complete or not, with its error.
    if (conversationId) {
      try {
        const conversation = await settled(conversationId);
        setActive(conversation);
        const last = conversation?.messages.at(-1);
        if (turn.error && !isStoppedMessage(turn.error) && last?.role !== MessageRole.ASSISTANT) setError(turn.error);
      } catch (e) {
        fail(e);
        if (turn.error && !isStoppedMessage(turn.error)) setError(turn.error);
      }
      void refreshList();
    } else if (turn.error && !isStoppedMessage(turn.error)) {
      setError(turn.error);
    }
    setLive(undefined);
  }

  function stop() {
    abort.current?.abort();
  }

  const personaName = (id: string) => options?.personas.find((p) => p.id === id)?.name ?? "Assistant";

  return (
    <div className={`chat-panel${drawerOpen ? " drawer-open" : ""}`} role="dialog" aria-label="Chat">
      {drawerOpen ? <div className="drawer-backdrop" onClick={() => setDrawerOpen(false)} /> : null}
      <nav className="conversations" id="conversations" aria-label="Conversations">
        <button className="primary new" onClick={startFresh}>
          + New conversation
        </button>
        {byDay(conversations).map(([day, group]) => (
          <section key={day} className="day" aria-label={day}>
            <h3>{day}</h3>
            <ul>
              {group.map((c) => (
                <li key={c.id} className={c.id === active?.id ? "active" : ""} title={lastChanged(c)}>
                  {renaming === c.id ? (
                    <input
                      autoFocus
                      aria-label="New title"
                      defaultValue={c.title}
                      onBlur={(e) => rename(c, e.target.value)}
                      onKeyDown={(e) => {
                        if (e.key === "Enter") void rename(c, e.currentTarget.value);
                        if (e.key === "Escape") {
                          e.stopPropagation(); // cancels the rename only
                          setRenaming(undefined);
                        }
                      }}
                    />
                  ) : (
                    <button
                      className="title"
                      onClick={() => open(c.id)}
                      aria-label={c.title || "Untitled"}
                      aria-describedby={c.preview ? `preview-${c.id}` : undefined}
                    >
                      <span className="name">{c.title || "Untitled"}</span>
                      {c.preview ? (
                        <span className="preview" id={`preview-${c.id}`}>
                          {c.preview}
                        </span>
                      ) : null}
                    </button>
                  )}
                  <span className="item-actions">
                    <button className="icon" aria-label={`Rename ${c.title}`} onClick={() => setRenaming(c.id)}>
                      ✎
                    </button>
                    <button className="icon" aria-label={`Delete ${c.title}`} onClick={() => remove(c)}>
                      <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true">
                        <path fill="currentColor" d="M9 3h6l1 2h4v2H4V5h4l1-2zm-3 6h12l-1 12H7L6 9z" />
                      </svg>
                    </button>
                  </span>
                </li>
              ))}
            </ul>
          </section>
        ))}
      </nav>
      <section className="conversation">
        <header className="chat-top">
          <button
            className="icon drawer-toggle"
            aria-label="Conversations"
            aria-controls="conversations"
            aria-expanded={drawerOpen}
            onClick={() => setDrawerOpen(!drawerOpen)}
          >
            <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true">
              <path fill="currentColor" d="M3 6h18v2H3zm0 5h18v2H3zm0 5h18v2H3z" />
            </svg>
          </button>
          <select aria-label="Persona" value={personaId} onChange={(e) => choosePersona(e.target.value)}>
            {options?.personas.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
          <button className="chip" title={`${chip[1]} (change in settings)`} onClick={() => setSettingsOpen(true)}>
            {chip[0]}
          </button>
          <span className="spacer" />
          <button className="icon" aria-label="Settings" onClick={() => setSettingsOpen(true)}>
            ⚙
          </button>
          <button className="icon" aria-label="Close chat" onClick={onClose}>
            ×
          </button>
        </header>
        <div className="messages">
          {!active && !live ? (
            <p className="empty">Ask anything about your notes. {personaName(personaId)} answers, citing passages.</p>
          ) : null}
          {active?.messages.map((m) =>
            m.role === MessageRole.USER ? (
              <div key={m.id} className="message user">
                {m.content}
              </div>
            ) : (
              <Answer
                key={m.id}
                text={m.content}
                sources={m.sources}
                incomplete={m.status === MessageStatus.INCOMPLETE}
                stopped={m.status === MessageStatus.INCOMPLETE && isStoppedMessage(m.error)}
                error={m.error || undefined}
                agent={storedAgent(m.agent)}
                onCite={setPassage}
              />
            ),
          )}
          {live ? (
            <>
              <div className="message user">{live.question}</div>
              <Answer
                text={live.text}
                sources={live.sources}
                streaming={!live.error && !live.stopped}
                error={live.error}
                stopped={live.stopped}
                agent={live.agent}
                onCite={setPassage}
              />
            </>
          ) : null}
          <div ref={bottom} />
        </div>
        {error ? (
          <div className="error banner" role="alert">
            {error}
          </div>
        ) : null}
        <form className="composer" onSubmit={send}>
          <textarea
            aria-label="Your question"
            placeholder="Ask your notes…"
            value={draft}
            rows={2}
            onChange={(e) => setDraft(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter" && !e.shiftKey) {
                e.preventDefault();
                e.currentTarget.form?.requestSubmit();
              }
            }}
          />
          <label className="agent-toggle" title="Let the model search and read your notes for this message">
            <input
              type="checkbox"
              checked={agentOn}
              disabled={!settings}
              onChange={(e) => setAgentChoice(e.target.checked)}
            />
            Agent
          </label>
          {busy ? (
            <button type="button" className="stop" onClick={stop}>
              Stop
            </button>
          ) : (
            <button type="submit" className="primary" disabled={!draft.trim() || !!live}>
              Send
            </button>
          )}
        </form>
      </section>
      {passage ? <PassageView
          passage={passage}
          vaultName={vaultName}
          joinLines={strictLineBreaks}
          onClose={closePassage}
        /> : null}
      {settingsOpen && options && settings ? (
        <SettingsModal
          options={options}
          settings={settings}
          onSaved={(saved) => {
            setSettings(saved);
            setAgentChoice(undefined);
          }}
          onClose={() => setSettingsOpen(false)}
        />
      ) : null}
    </div>
  );
}
