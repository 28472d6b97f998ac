/** @module Incidents: an unexpected exception (a bug) becomes `internal_error` with an id that is also in the log line. */
import { type RuntimeError, runtimeError } from "../../src/core/index.js";

/**
 * Logs an unexpected exception as one JSON line with a fresh incident id and returns the `internal_error`
 * the caller answers with: same id in `details.incident_id`, so an operator finds the stack from the answer.
 */
export function reportIncident(e: unknown, where: string): RuntimeError {
  const incidentId = crypto.randomUUID();
  const message = e instanceof Error ? e.message : String(e);
  const stack = e instanceof Error ? e.stack : undefined;
  console.error(JSON.stringify({ level: "error", incident_id: incidentId, where, error: message.slice(0, 1_000), stack }));
  return runtimeError("internal_error", `the service failed unexpectedly; nothing was changed (incident ${incidentId})`, { incident_id: incidentId });
}

/**
 * True for an exception the platform raised about storage or the object's availability: Durable Object
 * errors carry `retryable` or `overloaded` (Cloudflare's "Error handling" for Durable Objects). These are
 * `storage_error` (retry it); every other exception is a bug.
 */
export function isPlatformFault(e: unknown): boolean {
  if (typeof e !== "object" || e === null) return false;
  const flags = e as { retryable?: unknown; overloaded?: unknown };
  return flags.retryable === true || flags.overloaded === true;
}
