/** @module The page token of a client's submitted-task list (A2A ListTasks): an opaque keyset cursor bound to the client. */

/** The largest page of listSubmittedTasks (A2A ListTasks' pageSize bound). */
export const MAX_SUBMITTED_PAGE_SIZE = 100;

/** Where a page of listSubmittedTasks ended, and for which client. */
export interface PageCursor {
  readonly client: string;
  readonly updated_at: string;
  readonly task_id: string;
}

/** The cursor as an opaque token: base64url of a JSON array (task ids and client ids are not limited to ASCII). */
export function encodePageToken(cursor: PageCursor): string {
  const bytes = new TextEncoder().encode(JSON.stringify([cursor.client, cursor.updated_at, cursor.task_id]));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The cursor a token names, or null when it is not one of ours. */
export function decodePageToken(token: string): PageCursor | null {
  if (!/^[A-Za-z0-9_-]+$/.test(token)) return null;
  try {
    const binary = atob(token.replace(/-/g, "+").replace(/_/g, "/"));
    const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
    const value: unknown = JSON.parse(text);
    if (!Array.isArray(value) || value.length !== 3 || !value.every((v) => typeof v === "string")) return null;
    const [client, updatedAt, taskId] = value as [string, string, string];
    if (Number.isNaN(Date.parse(updatedAt)) || taskId === "") return null;
    return { client, updated_at: updatedAt, task_id: taskId };
  } catch {
    return null;
  }
}
