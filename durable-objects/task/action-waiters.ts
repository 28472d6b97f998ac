/**
 * @module The long-polls of GET .../actions/{action_id}?wait_ms= held by one task object: a waiter per poll,
 * keyed by action id, answered from the commit path when the action resolves or by its own timer when the
 * wait ends. Waiters live only in memory: the action's resolution is a WAL fact, so a client whose poll was
 * lost with an evicted object simply asks again.
 */
import { type Action, rateLimited, type RuntimeError } from "../../src/core/index.js";
import { MAX_ACTION_WAIT_MS } from "../../src/contract/limits.js";
import { ok, type RpcResult } from "../shared/rpc-result.js";
import { TokenSlots, tokenShareReached } from "../shared/token-slots.js";

/** Long-polls one task object holds at once; past it, 429 rate_limited (like the SSE subscriber cap). */
export const MAX_ACTION_WAITERS = 64;

/** What a poll answers: the action, or an error (the object broke while it waited). */
export type PollAnswer = RpcResult<{ action: Action }>;

interface Waiter {
  readonly answer: (result: PollAnswer) => void;
  readonly timer: ReturnType<typeof setTimeout>;
  /** The identity of the poller's token, when known (its share is counted by it). */
  readonly token: string | undefined;
}

/** How soon a refused poll should try again: a wait ends within MAX_ACTION_WAIT_MS, most far sooner. */
const WAITER_RETRY_MS = 1_000;

/** The open long-polls of one task object. */
export class ActionWaiters {
  private readonly byAction = new Map<string, Set<Waiter>>();
  private count = 0;
  private readonly byToken = new TokenSlots();

  constructor(
    private readonly max = MAX_ACTION_WAITERS,
    /** Waits one token may hold (its share of `max`). */
    private readonly maxPerToken = max,
  ) {}

  /** Polls waiting now. */
  get size(): number {
    return this.count;
  }

  /** Null when another poll (by `token`, when known) may wait; rate_limited when the object holds `max`, or the token its share. */
  full(token?: string): RuntimeError | null {
    const held = token === undefined ? 0 : this.byToken.of(token);
    // A slot frees at the latest when the longest wait ends.
    if (this.count >= this.max) return rateLimited(`this task already has ${this.count} waits on actions (the most one object holds); retry later`, WAITER_RETRY_MS, { limit: "action_waiters", max: this.max });
    if (held >= this.maxPerToken) return tokenShareReached("action_waiters", "waits on actions", held, this.maxPerToken, WAITER_RETRY_MS);
    return null;
  }

  /**
   * Waits for `actionId` to resolve, at most `waitMs` (callers check `full()` first and answer a resolved
   * action at once). When the wait ends unresolved, `onTimeout` gives the answer (the still-open action).
   */
  wait(actionId: string, waitMs: number, onTimeout: () => PollAnswer, token?: string): Promise<PollAnswer> {
    return new Promise((resolve) => {
      const set = this.byAction.get(actionId) ?? new Set<Waiter>();
      this.byAction.set(actionId, set);
      const waiter: Waiter = {
        answer: resolve,
        timer: setTimeout(() => {
          // Forgotten before the answer is built: building it may commit (reads reconcile), which calls `resolve`.
          this.forget(actionId, waiter);
          resolve(onTimeout());
        }, Math.min(Math.max(waitMs, 0), MAX_ACTION_WAIT_MS)),
        token,
      };
      set.add(waiter);
      this.count += 1;
      if (token !== undefined) this.byToken.take(token);
    });
  }

  /** After a commit: answers every poll waiting on one of these resolved actions. */
  resolve(actions: readonly Action[]): void {
    if (this.count === 0) return;
    for (const action of actions) {
      const set = this.byAction.get(action.action_id);
      if (set === undefined) continue;
      for (const waiter of set) {
        this.forget(action.action_id, waiter);
        waiter.answer(ok({ action: structuredClone(action) }));
      }
    }
  }

  private forget(actionId: string, waiter: Waiter): void {
    const set = this.byAction.get(actionId);
    if (set === undefined || !set.delete(waiter)) return;
    clearTimeout(waiter.timer);
    this.count -= 1;
    if (waiter.token !== undefined) this.byToken.release(waiter.token);
    if (set.size === 0) this.byAction.delete(actionId);
  }
}
