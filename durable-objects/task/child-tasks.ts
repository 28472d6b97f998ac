/**
 * @module The task-object side of child tasks (docs/model.md "Delegated steps"): the three calls task objects make to each
 * other for a delegation — a parent creates its child, cancels it, and a child reports its end to its parent — and
 * the ports that make those calls from the parent's (or child's) outbound calls. Each answer is idempotent, so an
 * outbox that retries after a crash duplicates nothing.
 */
import type { Actor, ChildReport, ChildTaskRequest } from "../../src/core/index.js";
import type { CommitShell } from "./commit-shell.js";
import type { ChildCancelAnswer, ChildCreateAnswer, DeliveryAnswer } from "./outbound-calls.js";
import type { RpcResult } from "../shared/rpc-result.js";
import type { SessionRpc } from "../session/session-rpc.js";

/** The meta row of an object whose child task was cancelled before it was created: it never will be. */
const CANCELLED_BEFORE_CREATE = "child_cancelled_before_create";

/** The child-task calls one task object answers. */
export class ChildTasks {
  constructor(
    private readonly shell: CommitShell,
    /** The session object of `sessionId`, which reserves task ids. */
    private readonly session: (sessionId: string) => DurableObjectStub<SessionRpc>,
  ) {}

  /** Was this object's child cancelled before it existed (by this delegation)? */
  private cancelledBeforeCreate(delegationId: string): boolean {
    const row = this.shell.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", CANCELLED_BEFORE_CREATE).toArray()[0];
    return row?.value === delegationId;
  }

  /** The answer for an object that already holds a task: ours (created by an earlier try) or another's. */
  private existing(request: ChildTaskRequest): ChildCreateAnswer | null {
    const task = this.shell.state.task;
    if (task === null) return null;
    if (task.delegated_from?.delegation_id === request.delegated_from.delegation_id) return { ok: true };
    return { ok: false, error: `task ${task.task_id} exists and is not this delegation's child`, retryable: false };
  }

  /**
   * Creates the child task `request` describes, in `sessionId`, on behalf of the parent's orchestrator. A repeat
   * (the parent's retry after a lost answer) finds the child and answers ok; a child cancelled before it was
   * created is never created.
   */
  async create(sessionId: string, request: ChildTaskRequest, createdByAgentId: string): Promise<ChildCreateAnswer> {
    const broken = this.shell.guard();
    if (broken !== null) return { ok: false, error: broken.message, retryable: true };
    if (this.cancelledBeforeCreate(request.delegated_from.delegation_id)) return { ok: false, error: "the child was cancelled before it was created", retryable: false };
    const known = this.existing(request);
    if (known !== null) return known;
    const reserved = (await this.session(sessionId).reserveChild(request.task_id, request.wal_name)) as RpcResult<null>;
    if (!reserved.ok) return { ok: false, error: `${reserved.error.code}: ${reserved.error.message}`, retryable: reserved.error.code === "storage_error" };
    // Another try may have created it while the session answered, or the parent's cancellation may have arrived
    // (checked again after the await: from here to the commit nothing else runs, so a cancellation is either
    // seen now or finds the task and cancels it).
    const raced = this.existing(request);
    if (raced !== null) return raced;
    if (this.cancelledBeforeCreate(request.delegated_from.delegation_id)) {
      await this.session(sessionId).release(request.task_id);
      return { ok: false, error: "the child was cancelled before it was created", retryable: false };
    }
    const actor: Actor = { role: "orchestrator", session_id: sessionId, agent_id: createdByAgentId, run_id: null };
    const command = {
      type: "create_task",
      task_id: request.task_id,
      wal_name: request.wal_name,
      title: request.title,
      summary: request.summary,
      ...(request.objective === null ? {} : { objective: request.objective }),
      steps: request.steps,
      parent_task_id: request.parent_task_id,
      root_task_id: request.root_task_id,
      delegated_from: request.delegated_from,
    };
    const result = this.shell.transact((unit) => this.shell.decideAndApply(unit, actor, command, Date.now()));
    await this.shell.afterCommit();
    if (!result.ok) return { ok: false, error: result.error.message, retryable: true };
    if (!result.value.ok) {
      await this.session(sessionId).release(request.task_id);
      return { ok: false, error: `${result.value.error.code}: ${result.value.error.message}`, retryable: false };
    }
    return { ok: true };
  }

  /**
   * The parent's delegation ended: the child is cancelled as agent.task_cancel would (its own children in turn, by
   * its own outbox). A child not created yet never will be.
   */
  async cancel(delegationId: string, reason: string): Promise<ChildCancelAnswer> {
    const broken = this.shell.guard();
    if (broken !== null) throw new Error(broken.message);
    const task = this.shell.state.task;
    if (task === null) {
      this.shell.sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", CANCELLED_BEFORE_CREATE, delegationId);
      return "not_created";
    }
    if (task.delegated_from?.delegation_id !== delegationId) return "not_created";
    if (task.status === "completed" || task.status === "failed" || task.status === "cancelled") return "already_terminal";
    const accepted = await this.shell.commitSystem({ type: "cancel_for_parent", delegation_id: delegationId, reason });
    if (!accepted) throw new Error("the child's cancellation could not be recorded");
    return "cancelled";
  }

  /** A child's report reaches its parent: recorded (again is fine), or the parent has no such delegation. */
  async deliver(report: ChildReport): Promise<DeliveryAnswer> {
    const broken = this.shell.guard();
    if (broken !== null) throw new Error(broken.message);
    const state = this.shell.state;
    if (state.task === null || !state.delegations.has(report.delegation_id)) return "parent_missing";
    const accepted = await this.shell.commitSystem({
      type: "record_delegation",
      delegation_id: report.delegation_id,
      report: { kind: "child_settled", child_task_id: report.child_task_id, child_status: report.child_status, result_summary: report.result_summary, artifact_ids: report.artifact_ids },
    });
    if (!accepted) throw new Error("the child's report could not be recorded");
    return "delivered";
  }
}
