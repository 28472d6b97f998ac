/**
 * @module The WAL event check a browser can afford: the envelope of a row (its sequence, ids, time, a known
 * event type and a payload object), without zod. The service checks every field of every row against the WAL
 * schema when it reads it from storage, before it serves the WAL; a client reading that export checks that
 * what it got is the WAL's rows, in order, and replays them.
 */
import { ID_PATTERN } from "../model/limits.js";
import { WAL_EVENT_TYPES } from "./event-types.js";
import type { WalEvent } from "./events.js";
import type { WalLineCheck } from "./wal-jsonl.js";

const EVENT_TYPES: ReadonlySet<string> = new Set(WAL_EVENT_TYPES);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isString = (v: unknown): boolean => typeof v === "string";
const isId = (v: unknown): boolean => typeof v === "string" && ID_PATTERN.test(v);

/** Each envelope field, what it must be, and the test. */
const ENVELOPE: readonly [field: keyof WalEvent, expected: string, test: (v: unknown) => boolean][] = [
  ["wal_seq", "a positive integer", (v) => Number.isSafeInteger(v) && (v as number) > 0],
  ["session_id", "a string", isString],
  ["event_id", "a string", isString],
  ["actor_agent_id", "a string", isString],
  ["actor_run_id", "a string or null", (v) => v === null || isString(v)],
  ["task_id", "an id (^[a-z0-9_-]{1,64}$)", isId],
  ["step_id", "an id (^[a-z0-9_-]{1,64}$) or null", (v) => v === null || isId(v)],
  ["created_at", "a string", isString],
  ["event_type", "a WAL event type", (v) => typeof v === "string" && EVENT_TYPES.has(v)],
  ["payload", "an object", isObject],
];

/** Why a JSON value is not a WAL row's envelope, or null when it is one. */
export function walEnvelopeProblem(value: unknown): string | null {
  if (!isObject(value)) return "expected an object";
  const wrong = ENVELOPE.filter(([field, , test]) => !test(value[field]));
  return wrong.length === 0 ? null : wrong.map(([field, expected]) => `${field}: expected ${expected}`).join("; ");
}

/** A line check (see readWalJsonlLines) that accepts any row whose envelope is right; the payload is the server's. */
export const walEnvelopeCheck: WalLineCheck = (value) => {
  const problem = walEnvelopeProblem(value);
  return problem === null ? { event: value as WalEvent } : { problem };
};
