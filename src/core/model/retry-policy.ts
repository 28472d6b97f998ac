/**
 * @module The retry policy, decided where an attempt ends: whether the step is retried (and when) or has
 * used up its attempts. Pure: the time comes from the decision.
 */
import type { RetryOutcome } from "../events/events.js";
import type { AttemptStatus, RetryPolicy, Step } from "./records.js";
import type { DagState } from "./state.js";

/** Attempt endings a retry policy retries: a failure, a timeout, a lost worker (never a cancellation or a block). */
const RETRIED_ENDINGS: ReadonlySet<AttemptStatus> = new Set(["failed", "timed_out", "lost"]);

/** The policy that governs a step: its own, else the task's default, else none (then a failure is final). */
export function effectivePolicy(state: DagState, step: Step): RetryPolicy | null {
  return step.retry_policy ?? state.task!.default_retry_policy;
}

/** The wait before retry number `attempts` + 1: initial × coefficient^(attempts − 1), at most max_interval_ms. */
export function backoffMs(policy: RetryPolicy, attempts: number): number {
  const delay = policy.initial_interval_ms * policy.backoff_coefficient ** Math.max(0, attempts - 1);
  return Math.min(delay, policy.max_interval_ms);
}

/**
 * What the step's retry policy makes of its held attempt ending with `ending` for `reason` at `now`: a retry at
 * now + backoff, or exhaustion (retry_at null) once max_attempts attempts were made; undefined when no policy
 * applies (none set, an ending it does not retry, or a non-retryable reason).
 */
export function retryOutcome(state: DagState, step: Step, ending: AttemptStatus, reason: string | null, now: number): RetryOutcome | undefined {
  const policy = effectivePolicy(state, step);
  if (policy === null || !RETRIED_ENDINGS.has(ending)) return undefined;
  if (reason !== null && policy.non_retryable_reasons?.includes(reason) === true) return undefined;
  const attempts = step.retry_attempts;
  if (attempts >= policy.max_attempts) return { attempts, max_attempts: policy.max_attempts, retry_at: null };
  return { attempts, max_attempts: policy.max_attempts, retry_at: new Date(now + backoffMs(policy, attempts)).toISOString() };
}

/** `{ retry }` for an event payload when a policy applied, else nothing (the field stays absent, as before policies). */
export function retryField(outcome: RetryOutcome | undefined): { retry?: RetryOutcome } {
  return outcome === undefined ? {} : { retry: outcome };
}
