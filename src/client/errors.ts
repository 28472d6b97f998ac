/** @module The one error the client throws: the API's error envelope (or a transport failure) with its code and whether a retry can help. */
import type { ErrorCode } from "../core/browser.js";

/**
 * Codes the client adds to the API's closed union: `network_error` (fetch threw, or the body broke off),
 * `unexpected_response` (a non-envelope error or a body that is not what the API answers). A 429 without the
 * envelope (a proxy's) is the API's own `rate_limited`.
 */
export type ClientErrorCode = "network_error" | "unexpected_response";

/** Every code a RuntimeApiError may carry. */
export type RuntimeApiErrorCode = ErrorCode | ClientErrorCode;

/** What a RuntimeApiError is built from. */
export interface RuntimeApiErrorInit {
  readonly code: RuntimeApiErrorCode;
  /** HTTP status; 0 when no answer arrived. */
  readonly status: number;
  readonly message: string;
  readonly details?: Record<string, unknown>;
  /** Defaults to `isRetryable(code, status)`. */
  readonly retryable?: boolean;
  /** How long the server (Retry-After) or the batcher asks a retry to wait. */
  readonly retryAfterMs?: number;
  readonly cause?: unknown;
}

/**
 * True for failures a retry with the same Idempotency-Key can fix: 503, 429, 502/504 and network failures.
 * Never `internal_error` (500): a bug answers the same way however often it is asked.
 */
export function isRetryable(code: RuntimeApiErrorCode, status: number): boolean {
  return code === "storage_error" || code === "network_error" || code === "rate_limited" || status === 429 || status === 502 || status === 503 || status === 504;
}

/** A failed call: the API's `{error: {code, message, details}}` with its HTTP status, or a transport failure. */
export class RuntimeApiError extends Error {
  override readonly name = "RuntimeApiError";
  readonly code: RuntimeApiErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown>;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;

  constructor(init: RuntimeApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.details = init.details ?? {};
    this.retryable = init.retryable ?? isRetryable(init.code, init.status);
    this.retryAfterMs = init.retryAfterMs;
  }

  /** The same error, asking its retry to wait `ms` (the batcher gives every command of a failed batch one delay). */
  withRetryAfter(ms: number): RuntimeApiError {
    return new RuntimeApiError({ code: this.code, status: this.status, message: this.message, details: this.details, retryable: this.retryable, retryAfterMs: ms, cause: this.cause });
  }
}

/** True for a RuntimeApiError, optionally of one of these codes. */
export function isRuntimeApiError(e: unknown, ...codes: RuntimeApiErrorCode[]): e is RuntimeApiError {
  return e instanceof RuntimeApiError && (codes.length === 0 || codes.includes(e.code));
}

/** The error of an answer whose body is the API's envelope (a non-2xx answer, or a failed batch command). */
export function errorFromEnvelope(status: number, body: unknown, retryAfterMs?: number): RuntimeApiError {
  const error = typeof body === "object" && body !== null ? (body as { error?: unknown }).error : undefined;
  if (typeof error === "object" && error !== null && typeof (error as { code?: unknown }).code === "string") {
    const e = error as { code: RuntimeApiErrorCode; message?: unknown; details?: unknown };
    const details = typeof e.details === "object" && e.details !== null ? (e.details as Record<string, unknown>) : {};
    return new RuntimeApiError({ code: e.code, status, message: typeof e.message === "string" ? e.message : e.code, details, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
  }
  const code: RuntimeApiErrorCode = status === 429 ? "rate_limited" : "unexpected_response";
  const text = typeof body === "string" ? body.slice(0, 300) : "";
  return new RuntimeApiError({ code, status, message: `HTTP ${status}${text === "" ? "" : `: ${text}`}`, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
}

/** Reads a non-2xx response into a RuntimeApiError (a body that breaks off is a network failure). */
export async function errorFromResponse(res: Response): Promise<RuntimeApiError> {
  let text: string;
  try {
    text = await res.text();
  } catch (cause) {
    return networkError(cause);
  }
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not the envelope (a proxy's page, an empty 429): keep the text for the message.
  }
  return errorFromEnvelope(res.status, body, retryAfterOf(res));
}

/** A fetch that threw or a body that broke off: no answer, so a retry with the same key is safe. */
export function networkError(cause: unknown): RuntimeApiError {
  const why = cause instanceof Error ? cause.message : String(cause);
  return new RuntimeApiError({ code: "network_error", status: 0, message: `network failure: ${why}`, cause });
}

/** An answer the API would not give (a 2xx whose body does not parse, a batch with the wrong number of results). */
export function unexpectedResponse(status: number, message: string, cause?: unknown): RuntimeApiError {
  return new RuntimeApiError({ code: "unexpected_response", status, message, retryable: false, cause });
}

/** Retry-After in milliseconds (seconds or an HTTP date), or undefined. */
function retryAfterOf(res: Response): number | undefined {
  const raw = res.headers.get("retry-after");
  if (raw === null) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
