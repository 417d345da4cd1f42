// A vault's attachments (images, PDFs) as blob: URLs, read with GetAttachment over grpc-web: the token goes with the
// call, and the bytes are shown as the type the server read from them. Each is read once per page load.
import { ingest } from "../api";

export interface LoadedAttachment {
  path: string;
  mediaType: string;
  url: string;
}

const loaded = new Map<string, Promise<LoadedAttachment>>();

export function loadAttachment(target: string, fromPath: string): Promise<LoadedAttachment> {
  const key = `${fromPath}\u0000${target}`;
  let found = loaded.get(key);
  if (!found) {
    found = ingest.getAttachment({ target, fromPath }).then((reply) => ({
      path: reply.path,
      mediaType: reply.mediaType,
      url: URL.createObjectURL(new Blob([reply.content as BlobPart], { type: reply.mediaType })),
    }));
    found.catch(() => loaded.delete(key)); // a failure is asked again next time
    loaded.set(key, found);
  }
  return found;
}

// A file name with an extension other than .md: an attachment, not a note.
export function isAttachmentName(target: string): boolean {
  const name = target.split("/").pop() ?? "";
  return /\.[a-z0-9]{1,8}$/i.test(name) && !/\.md$/i.test(name);
}
