/**
 * @module Writes of requests that arrive together, made in one storage turn. A session object takes every task's
 * reservation and index pushes; one commit (one sync to disk) per request made those commits its whole cost under
 * a fan-out. Queued here, the requests waiting when the object gets to them run in order in one turn, and their
 * writes commit together; each caller still gets its own result, which the output gate holds until that commit is
 * durable. Each request's writes are a transaction of their own inside the turn: one that throws leaves nothing
 * half-written and does not undo the others.
 */
export class WriteBatch {
  private queue: (() => void)[] = [];

  constructor(private readonly transactionSync: <T>(work: () => T) => T) {}

  /** Runs `work` in the next batch's turn; resolves with what it returned, rejects with what it threw. */
  run<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push(() => {
        try {
          resolve(this.transactionSync(work));
        } catch (e) {
          reject(e);
        }
      });
      // The first request of a batch waits one turn of the event loop, during which the requests already delivered
      // join it. scheduler.wait, not setTimeout: a faked or lost timer must never leave the queue waiting for good.
      if (this.queue.length === 1) void scheduler.wait(0).then(() => this.drain());
    });
  }

  private drain(): void {
    const queue = this.queue;
    this.queue = [];
    for (const job of queue) job();
  }
}
