/**
 * @module Abstract command specs for the model tests and their interpreter. A spec holds only numbers and
 * flags; `interpret` turns it into a concrete (actor, command) against the current DAG, so sequences stay
 * meaningful while the DAG changes and shrink well.
 */
import fc from "fast-check";
import { type Actor, type DagState, type Delegation, isTerminalTask, type WorkerRun } from "../../../src/core/index.js";
import { a2aClient, observer, orchestrator, SESSION, stranger, TASK } from "../harness.js";
import { approver, BAD_INPUT_SCHEMA, INPUT_SCHEMA, INPUTS, MISSING_ACTION } from "./actions.js";
import { DELEGATES, POLICIES, POOLS } from "./dag-gen.js";

/** Where a step id is picked from: 0 any, 1 ready, 2 held, 3 blocked or failed, 4 the actor's own held step, 5 missing, 6 deletable leaf. */
export interface StepPick {
  readonly from: number;
  readonly n: number;
}

/** One patch op of update_task, abstractly. */
export type PatchSpec =
  | { op: "update_task"; title: boolean; summary: boolean; record: number }
  | { op: "add_step"; id: number; deps: StepPick[]; optional: boolean; gpu: boolean; policy: number; delegate: number }
  | { op: "update_step"; step: StepPick; title: boolean; deps: StepPick[] | null; required: boolean | null; pool: number | null; policy: number | null }
  | { op: "delete_step"; step: StepPick }
  | { op: "add_dependency"; step: StepPick; dep: StepPick }
  | { op: "remove_dependency"; step: StepPick; dep: StepPick | null }
  | { op: "cancel_step"; step: StepPick }
  | { op: "reopen_step"; step: StepPick };

/** The orchestrator's task-level tools. */
export const TASK_OPS = ["complete_task", "fail_task", "cancel_task", "block_task", "reopen_task", "pause_task", "resume_task", "archive_task"] as const;

/** Statuses update_step is asked for: every step status, plus one that does not exist. */
export const UPDATE_STATUSES = ["pending", "ready", "claimed", "running", "blocked", "completed", "failed", "cancelled", "exploded"] as const;

/** One abstract command. `who` (0..99) picks the actor. */
export type Spec =
  | { k: "claim_step"; who: number; step: StepPick }
  | { k: "claim_next"; who: number }
  | { k: "update_step"; who: number; step: StepPick; status: number; result: string | null; artifacts: string[] | null; reason: boolean }
  | { k: "append_progress"; who: number; step: StepPick | null; phase: string | null; counter: number | null }
  | { k: "update_task"; who: number; ops: PatchSpec[] }
  | { k: "dispatch_worker"; who: number; pool: number; maxSteps: number | null; allowed: StepPick[] | null; timeout: number | null; agent: boolean }
  | { k: "finish_run"; who: number; run: number; outcome: number; result: unknown }
  | { k: "cancel_run"; who: number; run: number }
  | { k: "task_op"; who: number; op: (typeof TASK_OPS)[number]; reason: boolean }
  | { k: "request_action"; who: number; level: number; kind: number; schema: number; timeout: number | null; step: StepPick }
  | { k: "respond_action"; who: number; action: number; decision: number; input: number; comment: boolean }
  | { k: "reconcile_leases"; who: number; advance: number }
  /** The session graph's push: `version` relative to the task's (-1 stale, 0 a re-send, more: newer), `blockers` how many. */
  | { k: "set_blockers"; who: number; version: number; blockers: number }
  | { k: "tick"; advance: number }
  | { k: "create_task"; who: number }
  | { k: "garbage"; mode: number; value: unknown }
  | { k: "query"; who: number; pool: number }
  /** The runtime records what a delegation's outbound call found: `pick` the delegation, `report` and `variant` what. */
  | { k: "record_delegation"; who: number; pick: number; report: number; variant: number }
  | { k: "record_delivery"; who: number; state: number }
  /** The runtime's webhook outbox: queue events (`seq` picks a wal_seq, `hooks` how many subscriptions), record tries, retry one. */
  | { k: "webhook_queue"; who: number; seq: number; hooks: number }
  | { k: "webhook_tries"; who: number; picks: number[]; codes: number[]; final: boolean }
  | { k: "webhook_retry"; who: number; pick: number };

const who = fc.nat(99);
/**
 * Opaque JSON values (run results, garbage), canonicalised by a JSON round trip: fc.jsonValue may produce -0,
 * which the WAL stores as 0, so a live run result of -0 would differ from its replay (a known, harmless edge:
 * the core passes opaque values through as given).
 */
const json = (maxDepth: number) => fc.jsonValue({ maxDepth }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
const pick: fc.Arbitrary<StepPick> = fc.record({
  from: fc.oneof({ arbitrary: fc.constant(0), weight: 3 }, { arbitrary: fc.constant(1), weight: 4 }, { arbitrary: fc.constant(2), weight: 2 }, { arbitrary: fc.constant(3), weight: 1 }, { arbitrary: fc.constant(4), weight: 3 }, { arbitrary: fc.constant(5), weight: 1 }, { arbitrary: fc.constant(6), weight: 1 }),
  n: fc.nat(),
});
/** Clock advances: around leases, backoffs and action timeouts, now and then past the default 24 h action timeout. */
const advance = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(0, 999, 1_000, 1_001, 3_000, 5_000, 30_000, 61_000, 3_600_000) },
  { weight: 8, arbitrary: fc.nat(120_000) },
  { weight: 1, arbitrary: fc.constant(86_400_000) },
);

const patchArb: fc.Arbitrary<PatchSpec> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ op: fc.constant("update_task" as const), title: fc.boolean(), summary: fc.nat(3).map((n) => n > 0), record: fc.nat(9) }) },
  {
    weight: 4,
    arbitrary: fc.record({ op: fc.constant("add_step" as const), id: fc.nat(9), deps: fc.array(pick, { maxLength: 3 }), optional: fc.boolean(), gpu: fc.nat(4).map((n) => n === 0), policy: fc.nat(9), delegate: fc.nat(11) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("update_step" as const),
      step: pick,
      title: fc.boolean(),
      deps: fc.option(fc.array(pick, { maxLength: 3 }), { nil: null }),
      required: fc.option(fc.boolean(), { nil: null }),
      pool: fc.option(fc.oneof({ weight: 8, arbitrary: fc.nat(1) }, { weight: 1, arbitrary: fc.constant(2) }), { nil: null }),
      policy: fc.option(fc.nat(POLICIES.length), { nil: null, freq: 4 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("delete_step" as const), step: pick }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("add_dependency" as const), step: pick, dep: pick }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("remove_dependency" as const), step: pick, dep: fc.option(pick, { nil: null }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("cancel_step" as const), step: pick }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("reopen_step" as const), step: fc.oneof({ weight: 3, arbitrary: fc.record({ from: fc.constant(3), n: fc.nat() }) }, { weight: 1, arbitrary: pick }) }) },
);

/** update_step statuses (indexes into UPDATE_STATUSES), weighted; pending and ready are invalid_transition, "exploded" fails the schema. */
function statusArb(completedWeight: number): fc.Arbitrary<number> {
  return fc.oneof(
    { weight: completedWeight, arbitrary: fc.constant(5) }, // completed
    { weight: 3, arbitrary: fc.constant(3) }, // running
    { weight: 2, arbitrary: fc.constant(6) }, // failed
    { weight: 2, arbitrary: fc.constant(4) }, // blocked
    { weight: 2, arbitrary: fc.constant(2) }, // claimed
    { weight: 2, arbitrary: fc.constant(7) }, // cancelled
    { weight: 2, arbitrary: fc.constantFrom(0, 1, 8) },
  );
}

/** Command mixes: "mixed" exercises everything, "progress" mostly claims and completes so tasks reach their end. */
export type Profile = "mixed" | "progress";

const WEIGHTS: Record<Profile, Record<Spec["k"], number>> = {
  mixed: { claim_step: 10, claim_next: 12, update_step: 22, append_progress: 4, update_task: 8, dispatch_worker: 8, finish_run: 4, cancel_run: 2, task_op: 7, request_action: 5, respond_action: 5, reconcile_leases: 6, tick: 3, create_task: 1, garbage: 3, query: 2, record_delegation: 8, record_delivery: 3, set_blockers: 2, webhook_queue: 3, webhook_tries: 4, webhook_retry: 2 },
  progress: { claim_step: 4, claim_next: 25, update_step: 35, append_progress: 2, update_task: 3, dispatch_worker: 3, finish_run: 2, cancel_run: 1, task_op: 5, request_action: 2, respond_action: 2, reconcile_leases: 4, tick: 1, create_task: 1, garbage: 1, query: 1, record_delegation: 8, record_delivery: 4, set_blockers: 1, webhook_queue: 2, webhook_tries: 3, webhook_retry: 1 },
};

/** Random abstract commands with the profile's weights. */
export function specArb(profile: Profile): fc.Arbitrary<Spec> {
  const w = WEIGHTS[profile];
  const progress = profile === "progress";
  return fc.oneof(
    { weight: w.claim_step, arbitrary: fc.record({ k: fc.constant("claim_step" as const), who, step: pick }) },
    { weight: w.claim_next, arbitrary: fc.record({ k: fc.constant("claim_next" as const), who }) },
    {
      weight: w.update_step,
      arbitrary: fc.record({
        k: fc.constant("update_step" as const),
        who,
        step: pick,
        status: statusArb(progress ? 30 : 8),
        result: fc.option(fc.constantFrom("ok", "done well", ""), { nil: null }),
        artifacts: fc.option(fc.array(fc.constantFrom("art_1", "art_2", "s3://bucket/x"), { maxLength: 2 }), { nil: null }),
        reason: fc.boolean(),
      }),
    },
    { weight: w.append_progress, arbitrary: fc.record({ k: fc.constant("append_progress" as const), who, step: fc.option(pick, { nil: null }), phase: fc.option(fc.constantFrom("plan", "build"), { nil: null }), counter: fc.option(fc.nat(100), { nil: null }) }) },
    {
      weight: w.update_task,
      arbitrary: fc.record({
        k: fc.constant("update_task" as const),
        who,
        // An empty patch is a schema error: rare, so most patches get to the DAG checks.
        ops: fc.oneof({ weight: 1, arbitrary: fc.constant<PatchSpec[]>([]) }, { weight: 15, arbitrary: fc.array(patchArb, { minLength: 1, maxLength: 3 }) }),
      }),
    },
    {
      weight: w.dispatch_worker,
      arbitrary: fc.record({
        k: fc.constant("dispatch_worker" as const),
        who,
        pool: fc.oneof({ weight: 12, arbitrary: fc.constant(0) }, { weight: 6, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constant(2) }),
        maxSteps: fc.option(fc.oneof({ weight: 12, arbitrary: fc.integer({ min: 1, max: 4 }) }, { weight: 1, arbitrary: fc.constant(0) }), { nil: null }),
        allowed: fc.option(
          fc.oneof(
            { weight: 1, arbitrary: fc.constant<StepPick[]>([]) },
            { weight: 1, arbitrary: fc.constant<StepPick[]>([{ from: 5, n: 0 }]) },
            { weight: 10, arbitrary: fc.array(fc.record({ from: fc.nat(4), n: fc.nat() }), { minLength: 1, maxLength: 4 }) },
          ),
          { nil: null, freq: 2 },
        ),
        timeout: fc.option(fc.oneof({ weight: 1, arbitrary: fc.constant(10) }, { weight: 8, arbitrary: fc.constantFrom(1_000, 5_000, 120_000) }), { nil: null, freq: 2 }),
        agent: fc.boolean(),
      }),
    },
    { weight: w.finish_run, arbitrary: fc.record({ k: fc.constant("finish_run" as const), who, run: fc.nat(), outcome: fc.nat(3), result: fc.option(json(1), { nil: null }) }) },
    { weight: w.cancel_run, arbitrary: fc.record({ k: fc.constant("cancel_run" as const), who, run: fc.nat() }) },
    {
      weight: w.task_op,
      arbitrary: fc.record({
        k: fc.constant("task_op" as const),
        who,
        op: fc.oneof(
          { weight: progress ? 10 : 4, arbitrary: fc.constant("complete_task" as const) },
          { weight: 1, arbitrary: fc.constant("fail_task" as const) },
          { weight: 3, arbitrary: fc.constant("cancel_task" as const) },
          { weight: 3, arbitrary: fc.constant("block_task" as const) },
          { weight: 3, arbitrary: fc.constant("reopen_task" as const) },
          { weight: progress ? 1 : 3, arbitrary: fc.constant("pause_task" as const) },
          { weight: progress ? 1 : 3, arbitrary: fc.constant("resume_task" as const) },
          { weight: 1, arbitrary: fc.constant("archive_task" as const) },
        ),
        reason: fc.boolean(),
      }),
    },
    {
      weight: w.request_action,
      arbitrary: fc.record({
        k: fc.constant("request_action" as const),
        who,
        level: fc.nat(9),
        kind: fc.nat(1),
        // 0 none, 1 the model's input schema, 2 a schema with a bad regular expression.
        schema: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 6, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constant(2) }),
        timeout: fc.option(fc.constantFrom(1_000, 5_000, 60_000, 3_600_000), { nil: null, freq: 3 }),
        step: pick,
      }),
    },
    { weight: w.respond_action, arbitrary: fc.record({ k: fc.constant("respond_action" as const), who, action: fc.nat(), decision: fc.nat(9), input: fc.nat(9), comment: fc.boolean() }) },
    { weight: w.reconcile_leases, arbitrary: fc.record({ k: fc.constant("reconcile_leases" as const), who, advance }) },
    { weight: w.set_blockers, arbitrary: fc.record({ k: fc.constant("set_blockers" as const), who, version: fc.constantFrom(-1, 0, 1, 1, 2), blockers: fc.constantFrom(0, 0, 1, 2) }) },
    { weight: w.tick, arbitrary: fc.record({ k: fc.constant("tick" as const), advance }) },
    { weight: w.create_task, arbitrary: fc.record({ k: fc.constant("create_task" as const), who }) },
    { weight: w.garbage, arbitrary: fc.record({ k: fc.constant("garbage" as const), mode: fc.nat(9), value: json(2) }) },
    { weight: w.query, arbitrary: fc.record({ k: fc.constant("query" as const), who, pool: fc.nat(1) }) },
    { weight: w.record_delegation, arbitrary: fc.record({ k: fc.constant("record_delegation" as const), who, pick: fc.nat(), report: fc.nat(19), variant: fc.nat(9) }) },
    { weight: w.record_delivery, arbitrary: fc.record({ k: fc.constant("record_delivery" as const), who, state: fc.nat(3) }) },
    { weight: w.webhook_queue, arbitrary: fc.record({ k: fc.constant("webhook_queue" as const), who, seq: fc.nat(), hooks: fc.integer({ min: 1, max: 3 }) }) },
    { weight: w.webhook_tries, arbitrary: fc.record({ k: fc.constant("webhook_tries" as const), who, picks: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), codes: fc.array(fc.nat(5), { minLength: 3, maxLength: 3 }), final: fc.boolean() }) },
    { weight: w.webhook_retry, arbitrary: fc.record({ k: fc.constant("webhook_retry" as const), who, pick: fc.nat() }) },
  );
}

/** What the interpreter knows besides the state: the workers dispatched so far and the ids it has handed out. */
export interface Scene {
  readonly state: DagState;
  readonly workers: readonly Actor[];
  /** Step ids deleted so far (re-adding one is a valid add_step). */
  readonly deleted: readonly string[];
  /** Returns a fresh step id for add_step. */
  freshStepId(): string;
}

/** A concrete command, or a clock tick, or a read-only query. */
export type Concrete =
  | { kind: "command"; actor: Actor; command: unknown; advance: number }
  | { kind: "tick"; advance: number }
  | { kind: "query"; actor: Actor; pool: string };

/** A worker token that names a real run but another agent (a forged or stale token). */
export const IMPOSTOR_AGENT = "impostor";

const MISSING_STEP = "no_such_step";


function runOf(scene: Scene, actor: Actor): WorkerRun | undefined {
  return actor.run_id === null ? undefined : scene.state.runs.get(actor.run_id);
}

/** A genuine worker: mostly an active one, with the preference the command wants, sometimes any dispatched one. */
function worker(scene: Scene, n: number, prefer: "free" | "holding" | "any"): Actor | null {
  const { workers } = scene;
  if (workers.length === 0) return null;
  if (n % 5 !== 0) {
    const wanted = workers.filter((w) => {
      const run = runOf(scene, w);
      if (run === undefined || run.status !== "active") return false;
      if (prefer === "free") return run.current_step_id === null && run.claims_used < run.max_steps;
      if (prefer === "holding") return run.current_step_id !== null;
      return true;
    });
    if (wanted.length > 0) return wanted[n % wanted.length]!;
  }
  return workers[n % workers.length]!;
}

/**
 * Picks the actor from `n` (0..99): ten lanes by `n % 10`, mostly the tool's natural caller, sometimes another
 * role, the observer or another session's orchestrator; n >= 94 is a worker token naming another task or agent.
 */
/**
 * A caller the task is not for: the observer, another session's orchestrator, or an A2A client (the model's
 * tasks are the orchestrator's, so to a client they do not exist).
 */
function outsider(n: number): Actor {
  // The A2A client most often: the only caller whose cancel meets a task that is not there for it.
  return [observer, stranger, a2aClient, a2aClient, a2aClient][Math.floor(n / 10) % 5]!;
}

function actorFor(scene: Scene, n: number, bias: "worker" | "orchestrator", prefer: "free" | "holding" | "any" = "any"): Actor {
  const forged = (extra: Partial<Actor>): Actor => {
    const real = worker(scene, n, "any");
    return real === null ? observer : { ...real, ...extra };
  };
  if (n >= 97) return forged({ agent_id: IMPOSTOR_AGENT });
  if (n >= 94) return forged({ task_id: "task_2" });
  const lane = n % 10;
  const w = () => worker(scene, Math.floor(n / 10), prefer) ?? orchestrator;
  if (bias === "worker") return lane <= 7 ? w() : lane === 8 ? orchestrator : outsider(n);
  return lane <= 5 || lane === 9 ? orchestrator : lane === 6 ? w() : lane === 7 ? observer : outsider(n);
}

function stepIds(scene: Scene, from: number, actor: Actor | null, extra: readonly string[]): string[] {
  const { state } = scene;
  switch (from) {
    case 1:
      return [...state.index.ready.values()].flatMap((queue) => queue.ids());
    case 2:
      return [...state.index.held];
    case 3:
      return [...state.steps.values()].filter((s) => s.status === "blocked" || s.status === "failed").map((s) => s.step_id);
    case 4: {
      const held = actor === null ? undefined : runOf(scene, actor)?.current_step_id;
      return held == null ? [] : [held];
    }
    case 5:
      return [MISSING_STEP];
    case 6:
      return [...state.steps.values()]
        .filter((s) => (s.status === "pending" || s.status === "ready" || s.status === "cancelled") && (state.index.dependents.get(s.step_id)?.size ?? 0) === 0)
        .map((s) => s.step_id);
    default:
      return [...state.steps.keys(), ...extra];
  }
}

/** Resolves a pick to a step id; an empty category falls back to any step, an empty DAG to a missing id. */
function stepId(scene: Scene, p: StepPick, actor: Actor | null = null, extra: readonly string[] = []): string {
  let ids = stepIds(scene, p.from, actor, extra);
  if (ids.length === 0) ids = stepIds(scene, 0, actor, extra);
  return ids.length === 0 ? MISSING_STEP : ids[p.n % ids.length]!;
}

function patchOp(scene: Scene, spec: PatchSpec, added: string[]): Record<string, unknown> {
  const id = (p: StepPick) => stepId(scene, p, null, added);
  switch (spec.op) {
    case "update_task": {
      const op: Record<string, unknown> = { op: "update_task", ...(spec.title ? { title: "Renamed plan" } : {}), ...(spec.summary ? { summary: "New summary" } : {}) };
      // Now and then the task's default retry policy changes or is cleared, or another record field changes.
      if (spec.record < POLICIES.length) op.default_retry_policy = POLICIES[spec.record];
      else if (spec.record === POLICIES.length) op.default_retry_policy = null;
      else if (spec.record === POLICIES.length + 1) op.priority = spec.record;
      return op;
    }
    case "add_step": {
      let stepIdValue: string;
      if (spec.id <= 5) stepIdValue = scene.freshStepId();
      else if (spec.id <= 7 && scene.deleted.length > 0) stepIdValue = scene.deleted[spec.id % scene.deleted.length]!;
      else if (spec.id === 8) stepIdValue = id({ from: 0, n: spec.id });
      else stepIdValue = spec.id === 9 ? "Bad/Id" : scene.freshStepId();
      const step: Record<string, unknown> = { step_id: stepIdValue, title: `Added ${stepIdValue}`, summary: "", depends_on_step_ids: spec.deps.map(id) };
      if (spec.optional) step.required = false;
      if (spec.gpu) step.worker_pool_id = "gpu";
      if (spec.policy < POLICIES.length) step.retry_policy = POLICIES[spec.policy];
      if (spec.delegate < DELEGATES.length) step.delegate = DELEGATES[spec.delegate];
      added.push(stepIdValue);
      return { op: "add_step", step, reason: "grow the plan" };
    }
    case "update_step": {
      const fields: Record<string, unknown> = {};
      if (spec.title) fields.title = "Retitled";
      if (spec.deps !== null) fields.depends_on_step_ids = spec.deps.map(id);
      if (spec.required !== null) fields.required = spec.required;
      if (spec.pool !== null) fields.worker_pool_id = spec.pool === 2 ? "Not A Pool" : POOLS[spec.pool];
      if (spec.policy !== null) fields.retry_policy = POLICIES[spec.policy] ?? null;
      return { op: "update_step", step_id: id(spec.step), fields };
    }
    case "delete_step":
      return { op: "delete_step", step_id: id(spec.step) };
    case "add_dependency":
      return { op: "add_dependency", step_id: id(spec.step), depends_on_step_id: id(spec.dep) };
    case "remove_dependency": {
      const stepIdValue = id(spec.step);
      const own = scene.state.steps.get(stepIdValue)?.depends_on_step_ids ?? [];
      const dep = spec.dep === null && own.length > 0 ? own[spec.step.n % own.length]! : id(spec.dep ?? spec.step);
      return { op: "remove_dependency", step_id: stepIdValue, depends_on_step_id: dep };
    }
    case "cancel_step":
      return { op: "cancel_step", step_id: id(spec.step), reason: "not needed" };
    case "reopen_step":
      return { op: "reopen_step", step_id: id(spec.step) };
  }
}

function runId(scene: Scene, n: number, actor: Actor): string {
  if (actor.role === "worker" && actor.run_id !== null && n % 3 !== 0) return actor.run_id;
  const runs = [...scene.state.runs.keys()];
  if (runs.length === 0 || n % 11 === 10) return "run_missing";
  return runs[n % runs.length]!;
}

function garbage(scene: Scene, mode: number, value: unknown): unknown {
  const anyStep = stepId(scene, { from: 0, n: mode });
  switch (mode) {
    case 0:
      return value;
    case 1:
      return { type: "claim_step" };
    case 2:
      return { type: "update_step", step_id: "../etc/passwd", status: "completed" };
    case 3:
      return { type: "claim_step", step_id: anyStep, sneaky: value };
    case 4:
      return { type: "drop_database", value };
    case 5:
      return { type: "update_task", ops: [] };
    case 6:
      return { type: "update_step", step_id: anyStep, status: "completed", artifact_ids: Array.from({ length: 101 }, (_, i) => `a${i}`) };
    case 7:
      return { type: "dispatch_worker", allowed_step_ids: [] };
    case 8:
      return { type: "update_task", ops: [{ op: "update_step", step_id: anyStep, fields: {} }] };
    default:
      return { type: "finish_run", run_id: "", outcome: "finished" };
  }
}

/** A claim meant for a worker when no active run could claim: the orchestrator dispatches one instead. */
function needsWorker(scene: Scene, n: number): boolean {
  if (n >= 94 || n % 10 > 7 || scene.state.task === null || isTerminalTask(scene.state.task)) return false;
  return !scene.workers.some((w) => {
    const run = runOf(scene, w);
    return run !== undefined && run.status === "active" && run.current_step_id === null && run.claims_used < run.max_steps;
  });
}

/** A dispatch aimed at the ready queue: the pool of a ready step, sometimes scoped to it, sometimes pooled. */
function dispatchFor(scene: Scene, n: number): Record<string, unknown> {
  const ready = stepIds(scene, 1, null, []);
  const target = ready.length === 0 ? undefined : scene.state.steps.get(ready[n % ready.length]!);
  const cmd: Record<string, unknown> = { type: "dispatch_worker", worker_pool_id: target?.worker_pool_id ?? "default", max_steps: 1 + (n % 3) };
  if (target !== undefined && n % 4 === 0) cmd.allowed_step_ids = [target.step_id, ...ready.slice(0, 2)];
  return cmd;
}

/** Turns an abstract spec into a concrete actor and command against the current scene. */
export function interpret(scene: Scene, spec: Spec): Concrete {
  const command = (actor: Actor, cmd: unknown, adv = 0): Concrete => ({ kind: "command", actor, command: cmd, advance: adv });
  switch (spec.k) {
    case "claim_step": {
      if (needsWorker(scene, spec.who)) return command(orchestrator, dispatchFor(scene, spec.who));
      const actor = actorFor(scene, spec.who, "worker", "free");
      return command(actor, { type: "claim_step", step_id: stepId(scene, spec.step, actor) });
    }
    case "claim_next":
      if (needsWorker(scene, spec.who)) return command(orchestrator, dispatchFor(scene, spec.who));
      return command(actorFor(scene, spec.who, "worker", "free"), { type: "claim_next" });
    case "update_step": {
      const actor = actorFor(scene, spec.who, "worker", "holding");
      // A worker mostly reports on the step it holds.
      const own = actor.role === "worker" && spec.step.from !== 5 && spec.step.n % 4 !== 0 ? runOf(scene, actor)?.current_step_id : null;
      const cmd: Record<string, unknown> = { type: "update_step", step_id: own ?? stepId(scene, spec.step, actor), status: UPDATE_STATUSES[spec.status] };
      if (spec.result !== null) cmd.result_summary = spec.result;
      if (spec.artifacts !== null) cmd.artifact_ids = spec.artifacts;
      if (spec.reason) cmd.reason = "because";
      return command(actor, cmd);
    }
    case "append_progress": {
      const actor = actorFor(scene, spec.who, "worker", "holding");
      const cmd: Record<string, unknown> = { type: "append_progress" };
      if (spec.step !== null) cmd.step_id = stepId(scene, spec.step, actor);
      if (spec.phase !== null) cmd.phase = spec.phase;
      if (spec.counter !== null) cmd.counters = { files: spec.counter };
      return command(actor, cmd);
    }
    case "update_task": {
      const added: string[] = [];
      return command(actorFor(scene, spec.who, "orchestrator"), { type: "update_task", ops: spec.ops.map((op) => patchOp(scene, op, added)) });
    }
    case "dispatch_worker": {
      const cmd: Record<string, unknown> = { type: "dispatch_worker", worker_pool_id: spec.pool === 2 ? "No Such Pool!" : POOLS[spec.pool] };
      if (spec.maxSteps !== null) cmd.max_steps = spec.maxSteps;
      if (spec.allowed !== null) cmd.allowed_step_ids = spec.allowed.map((p) => stepId(scene, p));
      if (spec.timeout !== null) cmd.timeout_ms = spec.timeout;
      if (spec.agent) cmd.agent_id = `agent_${spec.who}`;
      return command(actorFor(scene, spec.who, "orchestrator"), cmd);
    }
    case "finish_run": {
      const actor = actorFor(scene, spec.who, "worker", "any");
      const cmd: Record<string, unknown> = { type: "finish_run", run_id: runId(scene, spec.run, actor), outcome: ["finished", "cancelled", "timeout", "exploded"][spec.outcome] };
      if (spec.result !== null) cmd.result = spec.result;
      return command(actor, cmd);
    }
    case "cancel_run": {
      const actor = actorFor(scene, spec.who, "orchestrator");
      return command(actor, { type: "cancel_run", run_id: runId(scene, spec.run, actor), reason: "changed my mind" });
    }
    case "task_op": {
      // Blocking and reopening, pausing and resuming mostly toggle, so a blocked or paused task usually goes on later.
      const status = scene.state.task?.status;
      let op: (typeof TASK_OPS)[number] = spec.op;
      if ((op === "block_task" || op === "reopen_task") && spec.who % 4 !== 0) op = status === "blocked" ? "reopen_task" : "block_task";
      if ((op === "pause_task" || op === "resume_task") && spec.who % 4 !== 0) op = status === "paused" ? "resume_task" : "pause_task";
      // A paused task is mostly resumed by the orchestrator's next toggle, so sequences do not stall paused.
      if (status === "paused" && op === "block_task" && spec.who % 4 !== 0) op = "resume_task";
      // A terminal task takes only an archive (again: idempotent), so most task ops on one archive it.
      if ((status === "completed" || status === "failed" || status === "cancelled") && spec.who % 3 !== 0) op = "archive_task";
      return command(actorFor(scene, spec.who, "orchestrator"), spec.reason ? { type: op, reason: "the orchestrator says so" } : { type: op });
    }
    case "request_action":
      return requestAction(scene, spec);
    case "respond_action":
      return respondAction(scene, spec);
    case "reconcile_leases":
      return command(spec.who < 80 ? { role: "system", session_id: SESSION, agent_id: "system", run_id: null } : actorFor(scene, spec.who, "worker"), { type: "reconcile_leases" }, spec.advance);
    case "set_blockers": {
      // Mostly the system (the session's push); now and then an agent, which may not.
      const actor = spec.who < 90 ? { role: "system" as const, session_id: SESSION, agent_id: "system", run_id: null } : actorFor(scene, spec.who, "orchestrator");
      const version = Math.max(1, (scene.state.task?.blockers_version ?? 0) + spec.version);
      return command(actor, { type: "set_blockers", version, blocked_by: ["blocker_a", "blocker_b"].slice(0, spec.blockers) });
    }
    case "tick":
      return { kind: "tick", advance: spec.advance };
    case "create_task":
      return command(actorFor(scene, spec.who, "orchestrator"), { type: "create_task", task_id: TASK, wal_name: "again", title: "Again", steps: [] });
    case "garbage":
      return command(actorFor(scene, spec.mode * 10, "orchestrator"), garbage(scene, spec.mode, spec.value));
    case "query":
      return { kind: "query", actor: actorFor(scene, spec.who, "worker"), pool: POOLS[spec.pool]! };
    case "record_delegation":
      return command(runtimeOr(scene, spec.who), recordDelegation(scene, spec));
    case "record_delivery":
      return command(runtimeOr(scene, spec.who), { type: "record_delivery", delivery_state: ["delivered", "failed", "parent_missing", "pending"][spec.state] });
    case "webhook_queue":
      return command(runtimeOr(scene, spec.who), webhookQueue(scene.state, spec.seq, spec.hooks));
    case "webhook_tries": {
      const ids = [...scene.state.webhookDeliveries.keys()];
      const tries = spec.picks.map((p, i) => ({
        delivery_id: ids.length === 0 || p % 7 === 6 ? "dlv_unknown" : ids[p % ids.length]!,
        status_code: [200, 204, 500, 410, null, 302][spec.codes[i % spec.codes.length]!] ?? null,
        error: null,
        ...(spec.final && i === 0 ? { final: true } : {}),
      }));
      return command(runtimeOr(scene, spec.who), { type: "record_webhook_tries", tries, max_tries: 3, retry_base_ms: 1_000 });
    }
    case "webhook_retry": {
      const ids = [...scene.state.webhookDeliveries.keys()];
      return command(runtimeOr(scene, spec.who), { type: "retry_webhook_delivery", delivery_id: ids.length === 0 || spec.pick % 5 === 4 ? "dlv_unknown" : ids[spec.pick % ids.length]! });
    }
  }
}

/** What the shell queues for `hooks` subscriptions of one WAL event (an event id the WAL's, or the same id again). */
function webhookQueue(state: DagState, seqPick: number, hooks: number): Record<string, unknown> {
  const seq = state.last_wal_seq === 0 ? 1 : 1 + (seqPick % state.last_wal_seq);
  const deliveries = Array.from({ length: hooks }, (_, h) => ({ delivery_id: `dlv_${seq}_wh${h}`, webhook_id: `wh${h}`, event_id: `evt_${seq}`, event_type: "task.updated", wal_seq: seq, index: 0 }));
  return { type: "queue_webhook_deliveries", deliveries };
}

/** The runtime itself (the system actor) for its own records; now and then a token's caller, who may not send them. */
function runtimeOr(scene: Scene, n: number): Actor {
  return n < 85 ? SYSTEM : actorFor(scene, n, n % 2 === 0 ? "orchestrator" : "worker");
}

const SYSTEM: Actor = { role: "system", session_id: SESSION, agent_id: "system", run_id: null };

/** A2A task states a peer reports: waiting, working, and each terminal one. */
const PEER_STATES = ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED", "TASK_STATE_AUTH_REQUIRED", "TASK_STATE_SUBMITTED"] as const;
const INTENTS = ["create_child", "cancel_child", "a2a_send", "a2a_follow", "a2a_answer", "a2a_cancel"] as const;

/**
 * record_delegation: mostly a plausible outcome of the call the outbox owes for an open delegation (its intent's
 * success, a retryable or final failure, a peer's state, a child's end); sometimes any report on any delegation
 * (stale, repeated, for the wrong kind), a child report naming another child, or a delegation that does not exist.
 */
function recordDelegation(scene: Scene, spec: Extract<Spec, { k: "record_delegation" }>): Record<string, unknown> {
  const { state } = scene;
  const open = [...state.index.openDelegations];
  const all = [...state.delegations.keys()];
  const id = spec.pick % 10 <= 6 && open.length > 0 ? open[spec.pick % open.length]! : spec.pick % 10 <= 8 && all.length > 0 ? all[spec.pick % all.length]! : "dlg_missing";
  const d = state.delegations.get(id);
  const cmd = (report: Record<string, unknown>) => ({ type: "record_delegation", delegation_id: id, report });
  const v = spec.variant;
  const failed = (intent: string) => ({ kind: "try_failed", intent, error: "connection reset", retryable: v <= 6 });
  const childEnd = (status?: string) => ({
    kind: "child_settled",
    child_task_id: v >= 5 ? "another-child" : (d?.child_task_id ?? "no-child"),
    child_status: status ?? (["completed", "completed", "completed", "failed", "cancelled"] as const)[v % 5],
    result_summary: v % 2 === 0 ? "child result" : null,
    artifact_ids: v % 3 === 0 ? ["child.md"] : [],
  });
  const peerState = (state: string) => ({
    kind: "remote_status",
    remote_status: state,
    ...(v % 3 === 0 ? { status_message: "peer says" } : {}),
    ...(v % 4 === 0 ? { artifacts: [{ artifact_id: `art${v}`, name: null, text: v % 8 === 0 ? "text" : null }] } : {}),
  });
  if (d === undefined || spec.report >= 16) {
    // Anything at all: a report the delegation may not expect now.
    switch (spec.report % 6) {
      case 0:
        return cmd({ kind: "started", remote_task_id: d?.child_task_id ?? "rt-any", delivery_mechanism: "polling" });
      case 1:
        return cmd(peerState(PEER_STATES[v % PEER_STATES.length]!));
      case 2:
        return cmd(failed(INTENTS[v % INTENTS.length]!));
      case 3:
        return cmd(childEnd());
      case 4:
        return cmd({ kind: "answered" });
      default:
        return cmd({ kind: "cancel_acknowledged", remote_state: (["cancelled", "already_terminal", "not_created"] as const)[v % 3] });
    }
  }
  return cmd(plausibleReport(d, spec.report, v, failed, childEnd, peerState));
}

/** A report that fits what the delegation waits for in its status (the outbox's call, or a child's end). */
function plausibleReport(
  d: Delegation,
  r: number,
  v: number,
  failed: (intent: string) => Record<string, unknown>,
  childEnd: (status?: string) => Record<string, unknown>,
  peerState: (state: string) => Record<string, unknown>,
): Record<string, unknown> {
  const fail = r % 4 === 0;
  if (d.kind === "task") {
    switch (d.status) {
      case "starting":
        return fail ? failed("create_child") : r % 4 === 1 ? childEnd() : { kind: "started", remote_task_id: d.child_task_id, delivery_mechanism: "callback" };
      case "cancelling":
        if (d.cancel_sent_at !== null || r % 4 === 1) return childEnd("cancelled");
        return fail ? failed("cancel_child") : { kind: "cancel_acknowledged", remote_state: (["cancelled", "already_terminal", "not_created"] as const)[v % 3] };
      default:
        return childEnd();
    }
  }
  switch (d.status) {
    case "starting":
      return fail ? failed("a2a_send") : { kind: "started", remote_task_id: `rt-${d.delegation_id}`, remote_status: v % 2 === 0 ? "TASK_STATE_SUBMITTED" : null, delivery_mechanism: v % 3 === 0 ? "streaming" : "polling" };
    case "answering":
      return fail ? failed("a2a_answer") : r % 4 === 1 ? peerState(PEER_STATES[v % PEER_STATES.length]!) : { kind: "answered" };
    case "cancelling":
      if (d.cancel_sent_at === null && r % 4 !== 1) return fail ? failed("a2a_cancel") : { kind: "cancel_acknowledged", remote_state: (["cancelled", "already_terminal", "not_created"] as const)[v % 3] };
      return fail ? failed("a2a_follow") : peerState(PEER_STATES[(v % 3) + 2]!);
    default:
      return fail ? failed("a2a_follow") : peerState(PEER_STATES[v % PEER_STATES.length]!);
  }
}

/**
 * request_action: levels 0–5 ask on a step, mostly by the worker holding it; 6–7 on a held step by the
 * orchestrator; 8–9 a task-level action, mostly by the orchestrator. Sometimes the wrong caller or step.
 */
function requestAction(scene: Scene, spec: Extract<Spec, { k: "request_action" }>): Concrete {
  const byWorker = spec.level <= 5;
  const actor = actorFor(scene, spec.who, byWorker ? "worker" : "orchestrator", "holding");
  const cmd: Record<string, unknown> = { type: "request_action", kind: spec.kind === 0 ? "approval" : "input", prompt: "Go ahead?" };
  if (spec.level <= 7) {
    const preferred: StepPick = { from: byWorker ? 4 : 2, n: spec.step.n };
    cmd.step_id = stepId(scene, spec.step.n % 5 === 0 ? spec.step : preferred, actor);
  }
  // An approval mostly comes without a schema (one with a schema is refused); an input mostly with one.
  if (spec.schema === 1 && (cmd.kind === "input" || spec.who % 4 === 0)) cmd.input_schema = INPUT_SCHEMA;
  else if (spec.schema === 2) cmd.input_schema = BAD_INPUT_SCHEMA;
  if (spec.timeout !== null) cmd.timeout_ms = spec.timeout;
  return { kind: "command", actor, command: cmd, advance: 0 };
}

/**
 * respond_action: mostly the orchestrator or an approver on an open action with a decision that fits its kind;
 * sometimes a worker, an observer or a stranger, a resolved or missing action, a misfit decision or input.
 */
function respondAction(scene: Scene, spec: Extract<Spec, { k: "respond_action" }>): Concrete {
  // With nothing open to answer, the orchestrator mostly asks first (a task-level action), so answers get tried.
  const live = scene.state.task !== null && !isTerminalTask(scene.state.task);
  if (live && scene.state.index.openActions.size === 0 && spec.action % 4 !== 0) {
    return requestAction(scene, { k: "request_action", who: 0, level: 8 + (spec.who % 2), kind: spec.decision % 2, schema: spec.decision % 2, timeout: null, step: { from: 0, n: 0 } });
  }
  const lane = spec.who % 10;
  const actor = lane <= 4 ? orchestrator : lane <= 7 ? approver : lane === 8 ? (worker(scene, spec.who, "any") ?? observer) : outsider(spec.who);
  const { actions } = scene.state;
  const open = [...scene.state.index.openActions];
  const all = [...actions.keys()];
  const n = spec.action;
  const actionId = n % 10 <= 6 && open.length > 0 ? open[n % open.length]! : n % 10 <= 8 && all.length > 0 ? all[n % all.length]! : MISSING_ACTION;
  const kind = actions.get(actionId)?.kind ?? "approval";
  let decision: string;
  if (spec.decision <= 6) decision = kind === "approval" ? (spec.decision <= 4 ? "approved" : "rejected") : spec.decision <= 4 ? "submitted" : "rejected";
  else if (spec.decision <= 8) decision = kind === "approval" ? "submitted" : "approved";
  else decision = "exploded";
  const cmd: Record<string, unknown> = { type: "respond_action", action_id: actionId, decision };
  // A submission mostly carries a fitting input; now and then a misfit, none, or an input beside another decision.
  if (decision === "submitted" ? spec.input <= 8 : spec.input === 9) cmd.input = INPUTS[spec.input <= 6 ? 0 : spec.input === 7 ? 1 : 2];
  if (spec.comment) cmd.comment = "looked at it";
  return { kind: "command", actor, command: cmd, advance: 0 };
}
