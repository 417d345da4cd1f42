// The one way the UI reaches the services: grpc-web through Envoy, with clients generated from protos/.
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { ChatService } from "./gen/secondbrain/chat/v1/chat_service_pb";
import { IngestService } from "./gen/secondbrain/ingest/v1/ingest_service_pb";
import { RetrieveService } from "./gen/secondbrain/retrieve/v1/retrieve_service_pb";

const TOKEN_KEY = "secondbrain.apiToken";

export function savedToken(): string {
  return localStorage.getItem(TOKEN_KEY) ?? "";
}

export function saveToken(token: string): void {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
}

// When the server has an API token, every call carries it; the person enters it once (see TokenPrompt).
const withToken: Interceptor = (next) => async (request) => {
  const token = savedToken();
  if (token) request.header.set("authorization", `Bearer ${token}`);
  return next(request);
};

const transport = createGrpcWebTransport({
  baseUrl: import.meta.env.VITE_GATEWAY_URL ?? window.location.origin,
  interceptors: [withToken],
});

export const chat = createClient(ChatService, transport);
export const retrieve = createClient(RetrieveService, transport);
export const ingest = createClient(IngestService, transport);

export function isUnauthenticated(error: unknown): boolean {
  return error instanceof ConnectError && error.code === Code.Unauthenticated;
}

export function isAbort(error: unknown): boolean {
  return (
    (error instanceof ConnectError && error.code === Code.Canceled) ||
    (error instanceof DOMException && error.name === "AbortError")
  );
}

// An error as a sentence a person can act on. The services already write such messages; what is added here is
// what only the browser knows (the gateway is not answering at all).
export function describeError(error: unknown): string {
  if (!(error instanceof ConnectError)) {
    return error instanceof Error ? error.message : String(error);
  }
  switch (error.code) {
    case Code.Unavailable:
      if (/fetch|network|upstream connect|no healthy upstream|connection/i.test(error.rawMessage)) {
        return "The secondbrain services are not reachable. Is `make run` (or `secondbrain up`) still running?";
      }
      return error.rawMessage;
    case Code.Unauthenticated:
      return "This server needs its API token. Enter it to continue.";
    case Code.Unknown:
      return error.rawMessage || "The gateway answered with something unexpected; check that Envoy is running.";
    default:
      return error.rawMessage || error.message;
  }
}
