/**
 * @module A task object's writes: commands authorized, replayed from their idempotency records or decided,
 * and committed through the commit shell (group commit for a batch); the task's create with its reservation
 * in the session.
 */
import type { AnyWriteAnswer as WriteAnswer, WebhookDelivery } from "../../src/contract/index.js";
import { deliveryRow } from "./webhook-outbox.js";
import { type Actor, authorize, systemActor, type DecisionValue, releasesClaim, runtimeError, stepSnapshot, taskSummary, type WalEvent } from "../../src/core/index.js";
import { type Idempotency, type IdempotencyRow, replayOf, scopeIdempotency } from "./storage/idempotency-store.js";
import type { CommitShell } from "./commit-shell.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import type { SessionRpc } from "../session/session-rpc.js";
import type { BatchItem } from "./task-graph-rpc.js";
import type { UnitOfWork } from "./unit-of-work.js";
import { fullAction } from "./action-text.js";

/** The writes of one task object. */
export class IdempotentWrites {
  /** Creates in flight, by Idempotency-Key (a create awaits the session, so a retry can arrive meanwhile). */
  private readonly creating = new Map<string, Promise<void>>();

  constructor(
    private readonly shell: CommitShell,
    /** The session object of `sessionId`, which reserves task ids and wal names. */
    private readonly session: (sessionId: string) => DurableObjectStub<SessionRpc>,
  ) {}

  /**
   * agent.task_create: reserves task_id and wal_name in the session, commits task_created, confirms. A retry
   * that arrives while the first create with its Idempotency-Key is still in flight waits for it and then
   * answers as a retry does (the first answer, or idempotency_conflict), not task_id_conflict.
   */
  async createTask(actor: Actor, body: Record<string, unknown>, clientIdem: Idempotency | null): Promise<RpcResult<WriteAnswer>> {
    // Authorized before anything may be replayed; the key is the caller's own.
    const denied = authorize(null, actor, { type: "create_task" });
    if (denied !== null) return err(denied);
    const idem = scopeIdempotency(actor, clientIdem);
    const pending = idem === null ? undefined : this.creating.get(idem.key);
    if (pending !== undefined) await pending;
    const run = this.createTaskOnce(actor, body, idem);
    if (idem !== null) {
      const settled = run.then(
        () => undefined,
        () => undefined,
      );
      this.creating.set(idem.key, settled);
      void settled.then(() => {
        if (this.creating.get(idem.key) === settled) this.creating.delete(idem.key);
      });
    }
    return run;
  }

  private async createTaskOnce(actor: Actor, body: Record<string, unknown>, idem: Idempotency | null): Promise<RpcResult<WriteAnswer>> {
    const shell = this.shell;
    const broken = shell.guard();
    if (broken !== null) return err(broken);
    const now = Date.now();
    const replayed = idem === null ? null : replayOf<WriteAnswer>(idem, shell.idempotency.read([idem.key]).get(idem.key), now);
    if (replayed !== null) return replayed;
    const taskId = String(body.task_id);
    const walName = String(body.wal_name);
    if (shell.state.task !== null) return err(runtimeError("task_id_conflict", `task ${taskId} already exists in this session`, { task_id: taskId }));
    const session = this.session(actor.session_id);
    // The session's subscriptions are read beside the reservation, not after it: the create's events are queued to them.
    const [reserved] = (await Promise.all([session.reserve(taskId, walName, idem, actor.role === "a2a_client" ? actor.agent_id : null), shell.prepareWrite(actor.session_id, taskId)])) as [RpcResult<null>, unknown];
    if (!reserved.ok) return err(reserved.error);
    // Another create may have committed while we waited on the session.
    if (shell.state.task !== null) return err(runtimeError("task_id_conflict", `task ${taskId} already exists in this session`, { task_id: taskId }));
    const result = shell.transact((unit) => {
      const created = shell.decideAndApply(unit, actor, { ...body, type: "create_task" }, Date.now());
      if (!created.ok) return created;
      const answer = this.answer(created.value.events);
      unit.remember(idem, answer, now);
      return ok(answer);
    });
    const outcome = result.ok ? result.value : result;
    if (!outcome.ok) await session.release(taskId);
    else await shell.afterCommit();
    return outcome;
  }

  /**
   * Group commit: commands decided in order against the live DAG, each seeing the ones before it, all
   * written in one transaction, one answer each. A rejected command writes nothing and does not undo the
   * others.
   */
  async executeBatch(clientItems: readonly BatchItem[]): Promise<RpcResult<WriteAnswer>[]> {
    const shell = this.shell;
    const broken = shell.guard();
    if (broken !== null) return clientItems.map(() => err(broken));
    const task = shell.state.task;
    if (task === null) return clientItems.map(() => err(shell.retention.noTask()));
    const reading = shell.prepareWrite(task.session_id, task.task_id);
    if (reading !== null) {
      await reading;
      // The first read of the session's subscriptions was I/O: the object may have changed meanwhile.
      const brokenNow = shell.guard();
      if (brokenNow !== null) return clientItems.map(() => err(brokenNow));
      if (shell.state.task === null) return clientItems.map(() => err(shell.retention.noTask()));
    }
    const now = Date.now();
    const items = clientItems.map((item) => ({ ...item, idem: scopeIdempotency(item.actor, item.idem) }));
    const keys = items.flatMap((item) => (item.idem === null ? [] : [item.idem.key]));
    let stored: Map<string, IdempotencyRow>;
    try {
      stored = keys.length === 0 ? new Map() : shell.idempotency.read(keys);
    } catch (e) {
      const error = runtimeError("storage_error", "the idempotency records could not be read; nothing was changed", { cause: e instanceof Error ? e.message : String(e) });
      return items.map(() => err(error));
    }
    const result = shell.transact((unit) => {
      shell.reconcileInto(unit, now);
      return items.map((item) => this.executeOne(unit, item, stored, now));
    });
    shell.idempotency.expire(now);
    await shell.afterCommit();
    return result.ok ? result.value : items.map(() => err(result.error));
  }

  /** A failed webhook delivery owed again (retry_webhook_delivery, as the system): the delivery as it now stands. */
  async retryWebhookDelivery(deliveryId: string): Promise<RpcResult<{ delivery: WebhookDelivery }>> {
    const shell = this.shell;
    const broken = shell.guard();
    if (broken !== null) return err(broken);
    const task = shell.state.task;
    if (task === null) return err(shell.retention.noTask());
    const result = shell.transact((unit) => shell.decideAndApply(unit, systemActor(task.session_id), { type: "retry_webhook_delivery", delivery_id: deliveryId }, Date.now()));
    await shell.afterCommit();
    if (!result.ok) return result;
    if (!result.value.ok) return result.value;
    return ok({ delivery: deliveryRow(task.task_id, shell.state.webhookDeliveries.get(deliveryId)!) });
  }

  /**
   * The answer a keyed command of `commandType` already got from this caller, read without deciding anything: a
   * retry told apart from a new request before the caller checks what is open now (an A2A answer's retry finds its
   * action answered). Null when the key has no record (never sent, or past its 24 hours); idempotency_conflict
   * when the key came with another request. Authorized first, as a replay in executeOne is.
   */
  storedAnswer(actor: Actor, commandType: string, clientIdem: Idempotency): RpcResult<WriteAnswer> | null {
    const shell = this.shell;
    const broken = shell.guard();
    if (broken !== null) return err(broken);
    if (shell.state.task === null) return null;
    const denied = authorize(shell.state, actor, { type: commandType });
    if (denied !== null) return err(denied);
    const idem = scopeIdempotency(actor, clientIdem)!;
    try {
      return replayOf<WriteAnswer>(idem, shell.idempotency.read([idem.key]).get(idem.key), Date.now());
    } catch (e) {
      return err(runtimeError("storage_error", "the idempotency record could not be read", { cause: e instanceof Error ? e.message : String(e) }));
    }
  }

  private executeOne(unit: UnitOfWork, item: BatchItem, stored: ReadonlyMap<string, IdempotencyRow>, now: number): RpcResult<WriteAnswer> {
    // Authorized before any replay: a stored answer (a worker token, a claimed step) goes only to a caller
    // who may send this command, only to the caller whose scoped key it is, and never to the token of a run
    // that has ended (run_ended: a spent token gets nothing, as an expired one gets nothing at the Worker).
    const denied = authorize(this.shell.state, item.actor, item.command);
    if (denied !== null) return err(denied);
    const replayed = (item.idem === null ? null : replayOf<WriteAnswer>(item.idem, stored.get(item.idem.key), now)) ?? unit.findPending(item.idem);
    if (replayed !== null) return replayed;
    const result = this.shell.decideAndApply(unit, item.actor, item.command, now, item.validated === true);
    if (!result.ok) return result;
    const events = [...result.value.events];
    const extra = this.describeValue(result.value.value, unit.events);
    if (item.claimNext && item.command.type === "update_step" && releasesClaim(item.command.status)) {
      const next = this.shell.decideAndApply(unit, item.actor, { type: "claim_next" }, now, true);
      if (next.ok) {
        events.push(...next.value.events);
        extra.next = this.describeValue(next.value.value, unit.events);
      } else {
        extra.next = { error: next.error };
      }
    }
    const answer = this.answer(events, extra, item.lean === true);
    unit.remember(item.idem, answer, now);
    return ok(answer);
  }

  /** `pending`: the unit's events not written yet (an action asked and answered in one unit is read from them). */
  private describeValue(value: DecisionValue, pending: readonly WalEvent[]): Record<string, unknown> {
    const state = this.shell.state;
    switch (value.kind) {
      case "claimed":
        return { step: stepSnapshot(state.steps.get(value.step_id)!), attempt_id: value.attempt_id };
      case "no_step_claimed":
        return { no_step_claimed: true, reason: value.reason };
      case "dispatched":
        // The worker token is minted by the route from this run record (signing is async; the commit is not).
        return { run_id: value.run_id, agent_id: value.agent_id, run: structuredClone(state.runs.get(value.run_id)) };
      case "action": {
        const action = fullAction(this.shell.sql, state, state.actions.get(value.action_id)!, pending);
        return { action_id: action.action_id, status: action.status, expires_at: action.expires_at, action };
      }
      case "none":
        return {};
    }
  }

  /**
   * A command's answer. Lean (a socket frame's by default) leaves out the task summary: building and encoding it
   * was most of an answer's cost, and a worker host reads only the step, the claim and wal_seq. A dispatch keeps
   * it: the route mints the run's worker token for the task it names.
   */
  private answer(events: readonly WalEvent[], extra: Record<string, unknown> = {}, lean = false): WriteAnswer {
    const state = this.shell.state;
    const eventIds = events.map((e) => e.event_id);
    if (lean && extra.run_id === undefined) return { event_ids: eventIds, wal_seq: state.last_wal_seq, ...extra };
    return { task: taskSummary(state), event_ids: eventIds, wal_seq: state.last_wal_seq, ...extra };
  }
}
