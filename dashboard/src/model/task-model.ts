/**
 * @module A task as the dashboard holds it: its WAL, and the DAG the same pure core the server runs rebuilds from
 * it (`apply`, `replay`). Live: each event on the task's stream is the sign that the WAL grew; the new events are
 * read (`GET .../wal?after_seq=`) and applied, so what is drawn is exactly the server's state at that wal_seq,
 * and any earlier wal_seq can be rebuilt the same way (the replay slider).
 */
import type { RuntimeClient } from "../../../src/client/index.js";
import { apply, type DagState, emptyState, replay, type WalEvent } from "../../../src/core/browser.js";
import { walMovedOn } from "./delivery-model.js";

/** Most WAL events read per request. */
const WAL_PAGE = 5_000;

/** A task's WAL and its live DAG. */
export class TaskModel {
  /** Every WAL event read so far, in order. */
  readonly events: WalEvent[] = [];
  /** The DAG at the last event read (changed in place; `version` counts changes). */
  state: DagState = emptyState();
  /** Bumped after every change, for views that re-render on it. */
  version = 0;
  /** Set when the task's stream ended (the task is terminal) or failed for good. */
  ended = false;
  error: string | null = null;
  private readonly listeners = new Set<() => void>();
  private reading: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly client: RuntimeClient,
    private readonly sessionId: string,
    readonly taskId: string,
  ) {}

  /** Calls `listener` after every change; returns its removal. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The last wal_seq read. */
  get walSeq(): number {
    return this.state.last_wal_seq;
  }

  /** Reads the WAL after what is held, page by page, and applies it; one read at a time (a read asked meanwhile runs after it). */
  catchUp(): Promise<void> {
    if (this.reading !== null) {
      this.again = true;
      return this.reading;
    }
    this.reading = (async () => {
      do {
        this.again = false;
        for (;;) {
          const page = await this.client.walExport({ sessionId: this.sessionId, taskId: this.taskId }, { after_seq: this.walSeq, limit: WAL_PAGE });
          for (const event of page.events) {
            apply(this.state, event);
            this.events.push(event);
          }
          if (page.events.length > 0) this.changed();
          if (page.events.length === 0 || this.walSeq >= page.last_wal_seq) break;
        }
      } while (this.again);
    })().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  /** Loads the WAL, then follows the task's event stream until `signal` aborts or the task ends. */
  async follow(signal: AbortSignal): Promise<void> {
    try {
      await this.catchUp();
      const stream = this.client.subscribe({ sessionId: this.sessionId, taskId: this.taskId }, { afterSeq: this.walSeq, signal });
      for await (const _event of stream) void this.catchUp();
      await this.catchUp();
      this.ended = true;
      this.changed();
    } catch (e) {
      if (signal.aborted) return;
      this.error = e instanceof Error ? e.message : String(e);
      this.changed();
    }
  }

  /**
   * Follows the session's stream until `signal` aborts: an event saying this task's WAL went past what is held
   * makes it read the WAL. A webhook delivery's try is a WAL event but no runtime event, so the task's own stream
   * never reports it, before the task ends or after; the session hears of it with the task's index push. Quiet
   * on failure: the task's own stream still carries everything else.
   */
  async followSession(signal: AbortSignal): Promise<void> {
    try {
      for await (const event of this.client.subscribeSession(this.sessionId, { signal })) if (walMovedOn(event, this.taskId, this.walSeq)) void this.catchUp();
    } catch {
      // The session stream gave up (or the page left); the view keeps what it has.
    }
  }

  /** The DAG as it was right after WAL event `walSeq` (rebuilt by the core's replay; `state` itself is not touched). */
  stateAt(walSeq: number): DagState {
    if (walSeq >= this.walSeq) return this.state;
    return replay(this.events.slice(0, Math.max(0, walSeq)));
  }

  private changed(): void {
    this.version += 1;
    for (const listener of this.listeners) listener();
  }
}
