/** @module Bounded waits for event-driven benchmarks: a deadline that can be cancelled, a latch opened from outside. */

/** Resolves after `ms` unless cancelled; never keeps the process alive on its own. */
export function deadlineAfter(ms: number): { promise: Promise<"timeout">; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), Math.max(0, ms));
    timer.unref();
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

/** `p`, or "timeout" after `ms`. */
export async function within<T>(p: Promise<T>, ms: number): Promise<T | "timeout"> {
  const d = deadlineAfter(ms);
  const outcome = await Promise.race([p, d.promise]);
  d.cancel();
  return outcome;
}

/** A promise resolved from outside. */
export function latch(): { promise: Promise<"done">; open: () => void } {
  let open: () => void = () => {};
  const promise = new Promise<"done">((resolve) => (open = () => resolve("done")));
  return { promise, open };
}
