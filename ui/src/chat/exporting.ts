// A conversation exported as a markdown note (ChatService.ExportConversation: its questions, its answers and their
// citations as [[links]]), saved by the browser as the file the service names.
import { Code, ConnectError } from "@connectrpc/connect";
import { chat, describeError } from "../api";

export async function downloadConversation(id: string): Promise<void> {
  const reply = await chat.exportConversation({ id });
  const file = new Blob([reply.markdown], { type: "text/markdown;charset=utf-8" });
  const url = URL.createObjectURL(file);
  const link = document.createElement("a");
  link.href = url;
  link.download = reply.fileName || "Conversation.md";
  document.body.append(link);
  link.click();
  link.remove();
  // The download has its own copy once it starts.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function describeExportError(error: unknown): string {
  if (error instanceof ConnectError && error.code === Code.Unimplemented) {
    return "This server cannot export conversations yet: its chat service has no ExportConversation.";
  }
  return `The conversation could not be exported: ${describeError(error)}`;
}
