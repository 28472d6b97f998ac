/** @module The one place domain error codes become HTTP answers (docs/api.md "Errors"). */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type ErrorCode, type RuntimeError, runtimeError } from "../../src/core/index.js";
import { isPlatformFault, reportIncident } from "./incident.js";

/** HTTP status of each error code. */
export const STATUS_OF: Record<ErrorCode, ContentfulStatusCode> = {
  validation_error: 400,
  unauthorized: 401,
  permission_denied: 403,
  tool_not_available: 403,
  not_found: 404,
  path_conflict: 409,
  task_id_conflict: 409,
  schedule_conflict: 409,
  dependency_cycle: 409,
  unknown_dependency: 409,
  duplicate_step: 409,
  step_has_dependents: 409,
  invalid_transition: 409,
  task_terminal: 409,
  task_not_dispatchable: 409,
  step_already_claimed: 409,
  step_already_claimed_by_run: 409,
  task_not_completeable: 409,
  action_resolved: 409,
  payload_too_large: 413,
  limit_exceeded: 409,
  idempotency_conflict: 422,
  storage_error: 503,
  internal_error: 500,
  rate_limited: 429,
};

/** A domain error thrown through Hono handlers; `onError` answers it with the envelope. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  constructor(readonly error: RuntimeError) {
    super(error.message);
  }
}

/** Throws an ApiError with this code. */
export function fail(code: ErrorCode, message: string, details?: Record<string, unknown>): never {
  throw new ApiError(runtimeError(code, message, details));
}

/** The error envelope every answer uses: `{"error": {code, message, details}}`. */
export function errorEnvelope(error: RuntimeError): { error: { code: RuntimeError["code"]; message: string; details: Record<string, unknown> } } {
  return { error: { code: error.code, message: error.message, details: error.details ?? {} } };
}

/** The challenge a 401 carries (RFC 6750 §3): MCP clients read it before anything else. */
export const BEARER_CHALLENGE = 'Bearer realm="agent-task-runtime"';

/** Answers the error envelope with the code's status; a rate_limited answer says when to retry (Retry-After, whole seconds). */
export function errorResponse(c: Context, error: RuntimeError): Response {
  if (error.code === "rate_limited") c.header("retry-after", String(retryAfterSeconds(error)));
  if (error.code === "unauthorized") c.header("www-authenticate", BEARER_CHALLENGE);
  return c.json(errorEnvelope(error), STATUS_OF[error.code]);
}

/** Seconds a rate_limited caller should wait: its `retry_after_ms` rounded up, at least 1. */
export function retryAfterSeconds(error: RuntimeError): number {
  const ms = Number(error.details?.retry_after_ms);
  return Number.isFinite(ms) && ms > 0 ? Math.max(1, Math.ceil(ms / 1000)) : 1;
}

/**
 * Normalises anything thrown into a domain error: a platform storage fault is storage_error (retry it);
 * any other unexpected exception is a bug, logged once as an incident and answered as internal_error (500).
 */
export function toRuntimeError(e: unknown, where = "route"): RuntimeError {
  if (e instanceof ApiError) return e.error;
  // decodeURIComponent of a path segment: the caller's malformed request, not a storage fault to retry.
  if (e instanceof URIError) return runtimeError("validation_error", "the request path is not valid percent-encoding", { cause: e.message.slice(0, 300) });
  if (isPlatformFault(e)) {
    const message = e instanceof Error ? e.message : String(e);
    console.error(JSON.stringify({ level: "warn", where, storage_error: message.slice(0, 300) }));
    return runtimeError("storage_error", "the service could not complete the request; retry it", { cause: message.slice(0, 300) });
  }
  return reportIncident(e, where);
}
