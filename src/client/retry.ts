/** @module Retry policy: exponential backoff with jitter, and a sleep that an AbortSignal cuts short. */

/** How a call is retried after a retryable failure (429, 503, network). */
export interface RetryOptions {
  /** Tries per logical call, the first included (default 3; 1 turns retries off). */
  readonly attempts?: number;
  /** Delay before the first retry, before jitter (default 100 ms). */
  readonly baseDelayMs?: number;
  /** Longest delay between tries (default 5,000 ms). */
  readonly maxDelayMs?: number;
}

/** RetryOptions with every field set. */
export type RetryPolicy = Required<RetryOptions>;

/** The default policy: 3 tries, 100 ms doubling up to 5 s. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, baseDelayMs: 100, maxDelayMs: 5_000 };

/** Fills in the defaults. */
export function retryPolicy(options: RetryOptions | undefined, defaults: RetryPolicy = DEFAULT_RETRY): RetryPolicy {
  return {
    attempts: Math.max(1, Math.floor(options?.attempts ?? defaults.attempts)),
    baseDelayMs: Math.max(0, options?.baseDelayMs ?? defaults.baseDelayMs),
    maxDelayMs: Math.max(0, options?.maxDelayMs ?? defaults.maxDelayMs),
  };
}

/**
 * Delay before retry number `retry` (1 for the first retry): base·2^(retry−1), capped, with "equal jitter" —
 * half fixed, half random — so a crowd of clients that failed together does not come back together.
 */
export function backoffDelay(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return ceiling / 2 + random() * (ceiling / 2);
}

/**
 * The wait before a retry the server timed with Retry-After (a 429 past a per-object bound): all of it, whatever
 * maxDelayMs says, since coming back sooner is only refused again, plus up to a quarter more at random, so
 * clients refused together do not come back together.
 */
export function retryAfterDelay(retryAfterMs: number, random: () => number = Math.random): number {
  return Math.max(0, retryAfterMs) * (1 + random() / 4);
}

/** The reason an aborted signal carries (an AbortError when it was aborted without one). */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

/** Waits `ms`; rejects with the signal's reason if it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) return reject(abortReason(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A controller that aborts when any of `signals` aborts (AbortSignal.any is not in every runtime we serve). */
export function linkedController(...signals: (AbortSignal | undefined)[]): { controller: AbortController; unlink: () => void } {
  const controller = new AbortController();
  const unlinks: (() => void)[] = [];
  for (const signal of signals) {
    if (signal === undefined) continue;
    if (signal.aborted) {
      controller.abort(abortReason(signal));
      break;
    }
    const onAbort = () => controller.abort(abortReason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    unlinks.push(() => signal.removeEventListener("abort", onAbort));
  }
  return { controller, unlink: () => unlinks.forEach((u) => u()) };
}
