// The settings modal: provider, model (from that provider's presets), persona, the base system prompt (with a
// reset), the mode (one search, or the model's own searching and reading) and the retrieval knobs. Saving sends
// the fields that changed; the server validates and answers with what it kept. A click outside it, or Escape (the
// chat page listens), closes it unsaved. It takes focus when it opens, keeps Tab inside it, and gives focus back.
import { useRef, useState } from "react";
import { chat, describeError } from "../api";
import type { GetOptionsResponse, Settings } from "../gen/secondbrain/chat/v1/chat_service_pb";
import { QUOTING } from "./ChatHeader";
import { useDialogFocus } from "./focus";

// Each field the form edits, and its name in an update mask.
const EDITABLE: [keyof Settings, string][] = [
  ["provider", "provider"],
  ["model", "model"],
  ["personaId", "persona_id"],
  ["systemPrompt", "system_prompt"],
  ["passages", "passages"],
  ["alternates", "alternates"],
  ["rerank", "rerank"],
  ["rerankModel", "rerank_model"],
  ["mode", "mode"],
];

// "a, b or c".
function orList(items: string[]): string {
  return items.length > 1 ? `${items.slice(0, -1).join(", ")} or ${items.at(-1)}` : (items[0] ?? "");
}

export function SettingsModal({
  options,
  settings,
  onSaved,
  onClose,
}: {
  options: GetOptionsResponse;
  settings: Settings;
  onSaved: (settings: Settings) => void;
  onClose: () => void;
}) {
  const [draft, setDraft] = useState<Settings>(settings);
  const [resetPrompt, setResetPrompt] = useState(false);
  const [error, setError] = useState("");
  const [saving, setSaving] = useState(false);
  // A press that began inside the form and ended outside it (selecting text in the prompt) is not a click outside.
  const pressedOutside = useRef(false);
  const dialog = useRef<HTMLDivElement>(null);
  useDialogFocus(dialog, { modal: true });
  const available = options.providers.filter((p) => p.available);
  const provider = options.providers.find((p) => p.id === draft.provider);
  const models = provider?.models ?? [];
  const quoting = draft.provider === QUOTING;
  // What would make a provider available here ("OPENAI_API_KEY", from "set OPENAI_API_KEY"), for the persona's note.
  const keys = options.providers
    .filter((p) => !p.available && p.unavailableReason)
    .map((p) => p.unavailableReason.replace(/^set /, ""));

  function change(fields: Partial<Settings>) {
    setDraft({ ...draft, ...fields });
  }

  function chooseProvider(id: string) {
    const chosen = options.providers.find((p) => p.id === id);
    change({ provider: id, model: chosen?.defaultModel ?? "" });
  }

  async function save(event: React.FormEvent) {
    event.preventDefault();
    setSaving(true);
    setError("");
    try {
      // Only what the person changed: an untouched field keeps following its default (the system prompt above
      // all, whose later improvements would otherwise never reach them).
      const paths = EDITABLE.filter(([field]) => draft[field] !== settings[field]).map(([, path]) => path);
      if (resetPrompt && !paths.includes("system_prompt")) paths.push("system_prompt");
      if (paths.length === 0) {
        onClose(); // nothing changed (an empty mask would mean every field)
        return;
      }
      const reply = await chat.updateSettings({
        settings: draft,
        resetSystemPrompt: resetPrompt,
        updateMask: { paths },
      });
      if (reply.settings) onSaved(reply.settings);
      onClose();
    } catch (e) {
      setError(describeError(e));
    } finally {
      setSaving(false);
    }
  }

  return (
    <div
      className="modal-backdrop"
      onPointerDown={(e) => {
        pressedOutside.current = e.target === e.currentTarget;
      }}
      onClick={(e) => {
        if (e.target === e.currentTarget && pressedOutside.current) onClose();
        pressedOutside.current = false;
      }}
    >
      <div
        ref={dialog}
        className="modal"
        role="dialog"
        aria-modal="true"
        aria-labelledby="settings-title"
        tabIndex={-1}
      >
        <form className="settings-form" onSubmit={save}>
          <h2 id="settings-title">Chat settings</h2>
          <label>
            Provider
            <select value={draft.provider} onChange={(e) => chooseProvider(e.target.value)} name="provider">
              {available.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.displayName}
                </option>
              ))}
            </select>
          </label>
          {options.providers.some((p) => !p.available) ? (
            <p className="muted small">
              Not available here:{" "}
              {options.providers
                .filter((p) => !p.available)
                .map((p) => `${p.displayName} (${p.unavailableReason})`)
                .join("; ")}
            </p>
          ) : null}
          <label>
            Model
            <select value={draft.model} onChange={(e) => change({ model: e.target.value })} name="model">
              {models.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.displayName || m.id}
                </option>
              ))}
            </select>
          </label>
          <label>
            Persona
            <select
              value={draft.personaId}
              onChange={(e) => change({ personaId: e.target.value })}
              name="persona"
              aria-describedby={quoting ? "settings-persona-no-model" : undefined}
            >
              {options.personas.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                  {p.role ? ` (${p.role})` : ""}
                </option>
              ))}
            </select>
          </label>
          {quoting ? (
            <p className="muted small persona-note" id="settings-persona-no-model">
              Personas take effect only with a model. The quoting provider has none: it answers with sentences quoted
              from your notes, whichever persona is chosen (the choice is kept for when a model is added).{" "}
              {keys.length
                ? `To use a model, set ${orList(keys)} where secondbrain runs, restart it and choose that provider here.`
                : "Choose a model provider above to use one."}
            </p>
          ) : null}
          <label>
            System prompt
            <textarea
              name="system-prompt"
              rows={8}
              value={resetPrompt ? (options.defaults?.systemPrompt ?? "") : draft.systemPrompt}
              disabled={resetPrompt}
              onChange={(e) => change({ systemPrompt: e.target.value })}
            />
          </label>
          <label className="inline">
            <input type="checkbox" checked={resetPrompt} onChange={(e) => setResetPrompt(e.target.checked)} />
            Reset to the default prompt
          </label>
          <fieldset>
            <legend>Mode</legend>
            <label className="inline">
              <input
                type="radio"
                name="mode"
                value="rag"
                checked={draft.mode !== "agent"}
                onChange={() => change({ mode: "rag" })}
              />
              Answer from one search
            </label>
            <label className="inline">
              <input
                type="radio"
                name="mode"
                value="agent"
                checked={draft.mode === "agent"}
                onChange={() => change({ mode: "agent" })}
              />
              Let the model search and read notes (agent)
            </label>
          </fieldset>
          <fieldset>
            <legend>Retrieval</legend>
            <label>
              Passages per answer
              <input
                type="number"
                name="passages"
                min={1}
                max={50}
                value={draft.passages}
                onChange={(e) => change({ passages: Number(e.target.value) })}
              />
            </label>
            <label className="inline">
              <input
                type="checkbox"
                name="alternates"
                checked={draft.alternates}
                onChange={(e) => change({ alternates: e.target.checked })}
              />
              Rephrase broad questions into alternates
            </label>
            <label className="inline">
              <input
                type="checkbox"
                name="rerank"
                checked={draft.rerank}
                onChange={(e) => change({ rerank: e.target.checked })}
              />
              Rerank candidates
            </label>
            <label>
              Reranker model
              <input
                type="text"
                name="rerank-model"
                value={draft.rerankModel}
                disabled={!draft.rerank}
                onChange={(e) => change({ rerankModel: e.target.value })}
              />
            </label>
          </fieldset>
          {error ? (
            <div className="error" role="alert">
              {error}
            </div>
          ) : null}
          <div className="actions">
            <button type="button" onClick={onClose}>
              Cancel
            </button>
            <button type="submit" className="primary" disabled={saving}>
              {saving ? "Saving…" : "Save"}
            </button>
          </div>
        </form>
      </div>
    </div>
  );
}
