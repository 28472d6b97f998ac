/** @module The closed union of domain error codes and the error value the core returns. */

/** Every error code the runtime can answer with (each one's HTTP status and meaning: docs/api.md). */
export const ERROR_CODES = [
  "validation_error",
  "unauthorized",
  "permission_denied",
  "tool_not_available",
  "not_found",
  "path_conflict",
  "task_id_conflict",
  "schedule_conflict",
  "dependency_cycle",
  "unknown_dependency",
  "duplicate_step",
  "step_has_dependents",
  "invalid_transition",
  "task_terminal",
  "task_not_dispatchable",
  "step_already_claimed",
  "step_already_claimed_by_run",
  "task_not_completeable",
  "action_resolved",
  "payload_too_large",
  "limit_exceeded",
  "idempotency_conflict",
  "storage_error",
  "internal_error",
  "rate_limited",
] as const;

/** A code from the closed union of domain errors. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** A domain failure as a value: a code from the closed union, a human message, optional details. */
export interface RuntimeError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly details?: Record<string, unknown>;
}

/** Builds a RuntimeError value. */
export function runtimeError(code: ErrorCode, message: string, details?: Record<string, unknown>): RuntimeError {
  return details === undefined ? { code, message } : { code, message, details };
}

/** A per-object bound is reached (`rate_limited`); `retry_after_ms` in the details becomes the Retry-After header. */
export function rateLimited(message: string, retryAfterMs: number, details: Record<string, unknown> = {}): RuntimeError {
  return runtimeError("rate_limited", message, { ...details, retry_after_ms: retryAfterMs });
}

/**
 * A counted cap is reached (`limit_exceeded`, 409): which limit, the count the request would make, and the
 * wrangler.toml var that sets it (docs/limits.md).
 */
export function limitExceeded(message: string, limit: number, value: number, setting: string): RuntimeError {
  return runtimeError("limit_exceeded", message, { limit, value, setting });
}
