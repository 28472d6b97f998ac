/** @module URL paths of the API: task references, encoded segments, query strings, and which writes may be batched. */
import type { TaskRef } from "./types.js";

const TASK_PATH = /^\/v1\/sessions\/[^/?#]+\/tasks\/[^/?#]+$/;
/** A task write: POST/PATCH on the task or under it (the batch route itself excluded). */
const TASK_WRITE = /^(\/v1\/sessions\/[^/?#]+\/tasks\/[^/?#]+)(\/[^?#]*)?$/;

/** One path segment, percent-encoded. */
export function seg(value: string): string {
  return encodeURIComponent(value);
}

/** The path of a session. */
export function sessionPath(sessionId: string): string {
  return `/v1/sessions/${seg(sessionId)}`;
}

/** The path of a task (`/v1/sessions/{sid}/tasks/{tid}`) from a path or ids. */
export function taskPath(task: TaskRef): string {
  if (typeof task !== "string") return `${sessionPath(task.sessionId)}/tasks/${seg(task.taskId)}`;
  const path = task.replace(/\/+$/, "");
  if (!TASK_PATH.test(path)) throw new TypeError(`not a task path: ${task} (expected /v1/sessions/{sid}/tasks/{tid})`);
  return path;
}

/** The task path a write goes to when it may join a batch to that task; null otherwise. */
export function batchTarget(method: string, path: string): string | null {
  if (method !== "POST" && method !== "PATCH") return null;
  const match = TASK_WRITE.exec(path);
  if (match === null || match[2] === "/batch") return null;
  return match[1]!;
}

/** A query-string value: arrays repeat the parameter; undefined is left out. */
export type QueryValue = string | number | boolean | readonly string[] | undefined;

/** `?a=1&b=2` (empty when nothing is set). */
export function queryString(query: Readonly<Record<string, QueryValue>> | undefined): string {
  if (query === undefined) return "";
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value as readonly string[]) params.append(name, v);
    else params.append(name, String(value));
  }
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}
