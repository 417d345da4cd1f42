// The chat, at /chat and /chat/<id>: for now the chat panel as a page of its own (closing it goes back).
import { useNavigate } from "react-router";
import { ChatPanel } from "./ChatPanel";

export function ChatPage({ onUnauthenticated }: { onUnauthenticated: () => void }) {
  const navigate = useNavigate();
  return <ChatPanel onClose={() => navigate(-1)} onUnauthenticated={onUnauthenticated} />;
}
