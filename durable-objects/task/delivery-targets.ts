/**
 * @module The subscriptions a task object's events go to, as its session holds them (webhooks, and this task's A2A
 * push configs), kept in memory only: their secrets are never written by the task object. The commit path reads
 * them synchronously to queue deliveries in the same commit as the events; they are read from the session before
 * the object's first write, again in the background once TARGETS_FRESH_MS passed, and at once when the session
 * says they changed (refreshDeliveryTargets). A subscription created meanwhile takes the task's events from the
 * next read on (at most TARGETS_FRESH_MS later on a busy task).
 */
import type { DeliveryFilter } from "../../src/core/index.js";
import { reportIncident } from "../shared/incident.js";
import type { DeliveryTarget } from "../session/session-rpc.js";

/** How long a read of the session's subscriptions is used before it is read again (in the background). */
export const TARGETS_FRESH_MS = 2_000;
/** After a failed read, how soon it is tried again. */
const TARGETS_RETRY_MS = 1_000;

/** The delivery targets of one task object. */
export class DeliveryTargets {
  private targets: readonly DeliveryTarget[] | null = null;
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | null = null;

  /** The task whose targets these are (known once the task exists, or its create names it). */
  private task: { sessionId: string; taskId: string } | null = null;

  constructor(
    /** The session's deliveryTargets(taskId). */
    private readonly read: (sessionId: string, taskId: string) => Promise<DeliveryTarget[]>,
  ) {}

  /**
   * Before a write of task `taskId`: the first read to await (null when there is nothing to wait for) (so even a task's first events are queued), a stale
   * one started in the background. A read that fails leaves the last one in use (none: nothing is queued until
   * one works).
   */
  ready(sessionId: string, taskId: string): Promise<void> | null {
    this.task ??= { sessionId, taskId };
    const stale = Date.now() - this.readAt >= TARGETS_FRESH_MS;
    // Never read yet: wait for it, unless one failed a moment ago (a session that does not answer must not hold up every write).
    if (this.targets === null) return stale ? this.refresh() : null;
    if (stale) void this.refresh();
    // Nothing to wait for: the write goes on in the same turn (no await on the hot path).
    return null;
  }

  /**
   * Reads the session's subscriptions now (one read at a time; a call during one waits for it, or with `after`,
   * for a read that starts after it: the session changed since that one began).
   */
  refresh(after = false): Promise<void> {
    if (this.reading !== null) return after ? this.reading.then(() => this.refresh()) : this.reading;
    if (this.task === null) return Promise.resolve();
    this.reading = this.read(this.task.sessionId, this.task.taskId)
      .then((targets) => {
        this.targets = targets;
        this.readAt = Date.now();
      })
      .catch((e) => {
        // Retried on the next write after TARGETS_RETRY_MS; what was read before stays in use.
        this.readAt = Date.now() - TARGETS_FRESH_MS + TARGETS_RETRY_MS;
        reportIncident(e, "task object: reading delivery targets");
      })
      .finally(() => {
        this.reading = null;
      });
    return this.reading;
  }

  /** The filters the commit path queues deliveries by (empty before the first read). */
  filters(): readonly DeliveryFilter[] {
    return this.targets ?? [];
  }

  /** A subscription by id, with its secret, for a send; undefined when the session no longer lists it (deleted or disabled). */
  target(webhookId: string): DeliveryTarget | undefined {
    return this.targets?.find((t) => t.webhook_id === webhookId);
  }

  /** True once a read came back (a delivery whose subscription it lacks is then gone, not just unknown). */
  get known(): boolean {
    return this.targets !== null;
  }
}
