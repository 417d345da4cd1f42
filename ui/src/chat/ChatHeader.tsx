// The conversation's header: the drawer's button (below 700 px), the conversation's title, the persona dropdown,
// the model chip (the model's name as the presets give it; a click opens the settings), Export and the settings.
import type { GetOptionsResponse, Settings } from "../gen/secondbrain/chat/v1/chat_service_pb";
import { Icon } from "./icons";

// The quoting provider: answers quote the notes, with no model, so a persona changes nothing.
export const QUOTING = "extractive";

// The model chip: the model's name (its provider's too, in full, on hover); the quoting provider, which has no
// model, in words.
function modelChip(settings: Settings | undefined, options: GetOptionsResponse | undefined): [string, string] {
  if (!settings) return ["…", "Model"];
  if (settings.provider === QUOTING) return ["Quoting (no model)", "Answers quote your notes; no model is used"];
  const provider = options?.providers.find((p) => p.id === settings.provider);
  const model = provider?.models.find((m) => m.id === settings.model)?.displayName ?? settings.model;
  return [model, `${provider?.displayName ?? settings.provider} · ${model}`];
}

export function ChatHeader({
  title,
  options,
  settings,
  personaId,
  drawerOpen,
  canExport,
  drawerToggle,
  onToggleDrawer,
  onPersona,
  onSettings,
  onExport,
}: {
  title: string;
  options?: GetOptionsResponse;
  settings?: Settings;
  personaId: string;
  drawerOpen: boolean;
  canExport: boolean;
  drawerToggle: React.RefObject<HTMLButtonElement | null>;
  onToggleDrawer: () => void;
  onPersona: (id: string) => void;
  onSettings: () => void;
  onExport: () => void;
}) {
  const [chip, chipTitle] = modelChip(settings, options);
  const quoting = settings?.provider === QUOTING;
  return (
    <header className="chat-top">
      <button
        ref={drawerToggle}
        type="button"
        className="icon drawer-toggle"
        aria-label="Conversations"
        aria-controls="conversations"
        aria-expanded={drawerOpen}
        onClick={onToggleDrawer}
      >
        <Icon name="menu" size={20} />
      </button>
      <h1 className="chat-title" id="chat-title" title={title}>
        {title}
      </h1>
      <div className="chat-controls">
        <select
          aria-label="Persona"
          aria-describedby={quoting ? "persona-no-model persona-no-model-more" : undefined}
          value={personaId}
          onChange={(e) => onPersona(e.target.value)}
        >
          {options?.personas.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
        {quoting ? (
          // Said beside the dropdown, not only in the settings: the answers are quotes whichever persona is chosen.
          <>
            <span id="persona-no-model" className="persona-note">
              Personas take effect only with a model.
            </span>
            <span id="persona-no-model-more" className="visually-hidden">
              Answers now quote your notes; the settings say how to add a key.
            </span>
          </>
        ) : null}
        <button type="button" className="chip" title={`${chipTitle} (change in settings)`} onClick={onSettings}>
          {chip}
        </button>
      </div>
      {canExport ? (
        <button
          type="button"
          className="icon"
          aria-label="Export this conversation"
          title="Export as a markdown note"
          onClick={onExport}
        >
          <Icon name="export" />
        </button>
      ) : null}
      <button type="button" className="icon" aria-label="Settings" title="Settings" onClick={onSettings}>
        <Icon name="settings" />
      </button>
    </header>
  );
}
