/** @module Test harness for the core: a DAG, its WAL, a fixed clock, counter ids, and actor factories. */
import {
  type Actor,
  apply,
  type DagState,
  type Decision,
  DEFAULT_LIMITS,
  decide,
  emptyState,
  type RuntimeError,
  type WalEvent,
} from "../../src/core/index.js";

/** The session every harness task lives in. */
export const SESSION = "sess_1";
/** The task id every harness task uses. */
export const TASK = "task_1";
/** The harness clock starts here. */
export const T0 = Date.parse("2026-01-01T00:00:00.000Z");

/** The orchestrator of SESSION. */
export const orchestrator: Actor = { role: "orchestrator", session_id: SESSION, agent_id: "orch", run_id: "orch_run" };
/** An observer of SESSION. */
export const observer: Actor = { role: "observer", session_id: SESSION, agent_id: "dash", run_id: null };
/** An A2A client of the session: it reaches only tasks it submitted. */
export const a2aClient: Actor = { role: "a2a_client", session_id: SESSION, agent_id: "partner", run_id: null };
/** An orchestrator of another session. */
export const stranger: Actor = { role: "orchestrator", session_id: "sess_other", agent_id: "orch2", run_id: "orch2_run" };

/** A step input with defaults. */
export function step(id: string, deps: string[] = [], extra: Record<string, unknown> = {}) {
  return { step_id: id, title: `Step ${id}`, summary: `Do ${id}`, depends_on_step_ids: deps, ...extra };
}

/** A DAG plus its WAL, driven one command at a time; every accepted command is appended and applied. */
export class Harness {
  state: DagState = emptyState();
  readonly wal: WalEvent[] = [];
  now = T0;
  private ids = 0;
  limits = DEFAULT_LIMITS;

  /** Decides `command` as `actor`; on success appends and applies the events. */
  run(command: Record<string, unknown>, actor: Actor = orchestrator): Decision {
    const decision = decide(this.state, command, {
      actor,
      now: this.now,
      newId: () => `id${String(++this.ids).padStart(8, "0")}`,
      limits: this.limits,
    });
    if (decision.ok) {
      for (const e of decision.events) {
        this.wal.push(e);
        apply(this.state, e);
      }
    }
    return decision;
  }

  /** Runs a command that must succeed; returns its decision. */
  ok(command: Record<string, unknown>, actor: Actor = orchestrator): Extract<Decision, { ok: true }> {
    const d = this.run(command, actor);
    if (!d.ok) throw new Error(`expected ${String(command.type)} to succeed, got ${d.error.code}: ${d.error.message}`);
    return d;
  }

  /** Runs a command that must fail; returns its error. */
  err(command: Record<string, unknown>, actor: Actor = orchestrator): RuntimeError {
    const d = this.run(command, actor);
    if (d.ok) throw new Error(`expected ${String(command.type)} to fail, it wrote ${d.events.map((e) => e.event_type).join(", ")}`);
    return d.error;
  }

  /** Creates the task with these steps. */
  create(steps: ReturnType<typeof step>[], extra: Record<string, unknown> = {}) {
    return this.ok({ type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", summary: "A plan", steps, ...extra });
  }

  /** Dispatches a worker run and returns its actor. */
  dispatch(opts: Record<string, unknown> = {}): Actor {
    const d = this.ok({ type: "dispatch_worker", ...opts });
    if (d.value.kind !== "dispatched") throw new Error("no run");
    return { role: "worker", session_id: SESSION, task_id: TASK, agent_id: d.value.agent_id, run_id: d.value.run_id };
  }

  /** Dispatches a worker and claims `stepId` with it. */
  claimWith(stepId: string, opts: Record<string, unknown> = {}): Actor {
    const w = this.dispatch(opts);
    this.ok({ type: "claim_step", step_id: stepId }, w);
    return w;
  }

  /** Claims and completes `stepId` with a fresh worker. */
  complete(stepId: string): Actor {
    const w = this.claimWith(stepId);
    this.ok({ type: "update_step", step_id: stepId, status: "completed", result_summary: `${stepId} done` }, w);
    return w;
  }

  /** The step's status. */
  status(stepId: string): string | undefined {
    return this.state.steps.get(stepId)?.status;
  }

  /** Event types of the last decision's events, by reading the WAL tail. */
  types(decision: Extract<Decision, { ok: true }>): string[] {
    return decision.events.map((e) => e.event_type);
  }
}
