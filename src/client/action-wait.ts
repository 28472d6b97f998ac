/**
 * @module Waiting for a person: long-polls of one action until it is resolved. A person may take hours, so a
 * dropped poll is not the end of the wait: the poll is asked again with the same action id, backing off per the
 * transport's retry policy, and the wait gives up only after that many polls in a row fail.
 */
import { MAX_ACTION_WAIT_MS } from "../contract/limits.js";
import { RuntimeApiError } from "./errors.js";
import { abortReason, backoffDelay, type RetryPolicy, sleep } from "./retry.js";
import type { Action } from "./types.js";

/** The longest wait one GET .../actions/{action_id}?wait_ms= may ask for. */
export { MAX_ACTION_WAIT_MS };

/**
 * Sends a write again after a retryable failure its own tries did not overcome, with the same Idempotency-Key
 * (the caller's `send` carries it): a request that did land answers with its first answer, so this never writes
 * twice. Gives up after `retry.attempts` sends in a row fail.
 */
export async function resend<T>(send: () => Promise<T>, retry: RetryPolicy, signal: AbortSignal | undefined): Promise<T> {
  for (let sent = 1; ; sent++) {
    try {
      return await send();
    } catch (e) {
      if (signal?.aborted === true) throw abortReason(signal);
      if (!(e instanceof RuntimeApiError) || !e.retryable || sent >= retry.attempts) throw e;
      await sleep(Math.min(retry.maxDelayMs, e.retryAfterMs ?? backoffDelay(sent, retry)), signal);
    }
  }
}

/** A poll that answers before this while the action is still open is not asked again at once (a server that does not hold polls). */
const MIN_POLL_SPACING_MS = 1_000;

/** Options of `waitForAction`. */
export interface WaitForActionOptions {
  /** Stops waiting: the wait rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** How long each long-poll asks the server to hold (0–30,000 ms; default 30,000). */
  readonly pollMs?: number;
}

/** One long-poll: the action as it is when it resolves or when `waitMs` ends. */
export type ActionPoll = (waitMs: number, signal: AbortSignal | undefined) => Promise<Action>;

/** Polls until the action is resolved; retryable failures (network, 429, 503) are polled through, see the module comment. */
export async function pollUntilResolved(poll: ActionPoll, retry: RetryPolicy, opts: WaitForActionOptions = {}): Promise<Action> {
  const { signal } = opts;
  const waitMs = Math.max(0, Math.min(MAX_ACTION_WAIT_MS, Math.floor(opts.pollMs ?? MAX_ACTION_WAIT_MS)));
  // A function, not the expression: the poll may abort the signal between two checks of one iteration.
  const aborted = (): boolean => signal?.aborted === true;
  let failures = 0;
  for (;;) {
    if (aborted()) throw abortReason(signal!);
    const started = Date.now();
    let action: Action;
    try {
      action = await poll(waitMs, signal);
    } catch (e) {
      if (aborted()) throw abortReason(signal!);
      if (!(e instanceof RuntimeApiError) || !e.retryable) throw e;
      failures += 1;
      if (failures >= retry.attempts) throw e;
      await sleep(Math.min(retry.maxDelayMs, e.retryAfterMs ?? backoffDelay(failures, retry)), signal);
      continue;
    }
    failures = 0;
    if (action.status === "resolved") return action;
    const spacing = MIN_POLL_SPACING_MS - (Date.now() - started);
    if (spacing > 0) await sleep(spacing, signal);
  }
}
