/**
 * @module Helpers shared by the task-model rules tests: rejection checks that a refused command writes nothing,
 * ways to put a step in each status, and small readers of the DAG, its runs and its attempts.
 */
import { expect } from "vitest";
import { type Actor, type Decision, querySteps, rebuildIndex, replay, type RuntimeError, type StepPage, type StepQuery, type WalEvent } from "../../../src/core/index.js";
import { Harness, orchestrator, SESSION, step, TASK } from "../harness.js";

/** An accepted decision. */
export type Ok = Extract<Decision, { ok: true }>;
/** A command or patch op as plain data. */
export type Cmd = Record<string, unknown>;

/** The event types a decision wrote. */
export const types = (d: Ok): string[] => d.events.map((e) => e.event_type);
/** The step ids of the events a decision wrote. */
export const stepIds = (d: Ok): (string | null)[] => d.events.map((e) => e.step_id);
/** An event's payload as a plain record. */
export const payload = (e: WalEvent | undefined): Record<string, unknown> => (e?.payload ?? {}) as Record<string, unknown>;
/** An agent.task_update command with these ops. */
export const upd = (...ops: Cmd[]): Cmd => ({ type: "update_task", ops });
/** An agent.task_update_step command. */
export const setStep = (stepId: string, status: string, extra: Cmd = {}): Cmd => ({ type: "update_step", step_id: stepId, status, ...extra });
/** A step input with required=false. */
export const optional = (id: string, deps: string[] = []) => step(id, deps, { required: false });

/** The DAG rebuilt from the WAL equals the live one, and the live indexes equal freshly rebuilt ones. */
export function consistent(h: Harness): void {
  expect(replay(h.wal)).toEqual(h.state);
  expect(rebuildIndex(h.state)).toEqual(h.state.index);
}

/** The command fails with `code`, and neither the WAL nor the DAG changes. */
export function rejects(h: Harness, command: Cmd, code: RuntimeError["code"], actor: Actor = orchestrator): RuntimeError {
  const walLength = h.wal.length;
  const before = replay(h.wal);
  const error = h.err(command, actor);
  expect(error.code).toBe(code);
  expect(h.wal.length).toBe(walLength);
  expect(h.state).toEqual(before);
  return error;
}

/** Claims and completes a ready step, then ends the worker run so no run lingers. */
export function done(h: Harness, id: string): void {
  const w = h.complete(id);
  h.ok({ type: "finish_run", run_id: w.run_id, outcome: "finished" }, w);
}

/**
 * Moves the ready step `id` to `status` through transitions the task tools allow; "pending" makes it depend on the step `gate`,
 * which must exist and not be completed. Returns the worker that holds or held the step, if any.
 */
export function put(h: Harness, id: string, status: string): Actor | null {
  let worker: Actor | null = null;
  switch (status) {
    case "ready":
      break;
    case "pending":
      h.ok(upd({ op: "add_dependency", step_id: id, depends_on_step_id: "gate" }));
      break;
    case "claimed":
      worker = h.claimWith(id);
      break;
    case "running":
      worker = h.claimWith(id);
      h.ok(setStep(id, "running"), worker);
      break;
    case "blocked":
    case "failed":
      worker = h.claimWith(id);
      h.ok(setStep(id, status, { reason: `${status} by worker`, result_summary: `${id} ${status}` }), worker);
      break;
    case "completed":
      done(h, id);
      break;
    case "cancelled":
      h.ok(upd({ op: "cancel_step", step_id: id }));
      break;
    default:
      throw new Error(`cannot put a step in ${status}`);
  }
  expect(h.status(id)).toBe(status);
  return worker;
}

/** Ids a task or step may not have: empty, upper case, path-like, spaced, too long, non-ASCII. */
export const INVALID_IDS = ["", "A", "a/b", "..", ".hidden", "a.b", "/abs", "a b", "x".repeat(65), "ünï"];

/** The default step lease (step_lease_timeout_ms). */
export const LEASE_MS = 60_000;
/** A harness time as the ISO string the core stores. */
export const iso = (ms: number) => new Date(ms).toISOString();

/** A worker-role caller that holds no run of the task. */
export const ghost: Actor = { role: "worker", session_id: SESSION, task_id: TASK, agent_id: "ghost", run_id: "run_ghost" };
/** A system caller (not a task tool user). */
export const systemCaller: Actor = { role: "system", session_id: SESSION, agent_id: "system", run_id: null };

/** Like `rejects`, with the actor before the code: the command as `actor` is rejected with `code` and writes nothing. */
export function rejectsAs(h: Harness, command: Record<string, unknown>, actor: Actor, code: string): RuntimeError {
  const before = h.wal.length;
  const seq = h.state.last_wal_seq;
  const d = h.run(command, actor);
  if (d.ok) throw new Error(`expected ${String(command.type)} to fail with ${code}, it wrote ${d.events.map((e) => e.event_type).join(", ")}`);
  expect(d.error.code).toBe(code);
  expect(h.wal.length).toBe(before);
  expect(h.state.last_wal_seq).toBe(seq);
  expect(replay(h.wal)).toEqual(h.state);
  return d.error;
}

/** Runs a command that must succeed and returns its event types; checks the WAL still replays to the state. */
export function typesOf(h: Harness, command: Record<string, unknown>, actor: Actor = orchestrator): string[] {
  const d = h.ok(command, actor);
  expect(replay(h.wal)).toEqual(h.state);
  return d.events.map((e) => e.event_type);
}

/** agent.task_query_steps as `actor`; the query must succeed. */
export function q(h: Harness, actor: Actor, query: StepQuery = {}): StepPage {
  const r = querySteps(h.state, actor, query);
  if (!r.ok) throw new Error(`query failed: ${r.error.code}: ${r.error.message}`);
  return r.value;
}
/** The step ids of a query page. */
export const ids = (p: StepPage) => p.steps.map((s) => s.step_id);

/** agent.task_query_steps as `actor`; the query must fail, and its error code is returned. */
export function qErr(h: Harness, actor: Actor, query: StepQuery = {}): string {
  const r = querySteps(h.state, actor, query);
  if (r.ok) throw new Error(`query should fail, got ${ids(r.value).join(",")}`);
  return r.error.code;
}

/** The step record `id`, which must exist. */
export function st(h: Harness, id: string) {
  const s = h.state.steps.get(id);
  if (s === undefined) throw new Error(`no step ${id}`);
  return s;
}

/** The run record of a worker actor, which must exist. */
export function runOf(h: Harness, actor: Actor) {
  const r = h.state.runs.get(actor.run_id!);
  if (r === undefined) throw new Error("no run");
  return r;
}

/** The attempts of step `id`, in order. */
export function attemptsOf(h: Harness, id: string) {
  return st(h, id).attempt_ids.map((a) => h.state.attempts.get(a)!);
}

/** Task with roots a, c, d and b depending on a. */
export function base(): Harness {
  const h = new Harness();
  h.create([step("a"), step("b", ["a"]), step("c"), step("d")]);
  return h;
}

/** The events of one type. */
export const byType = (events: WalEvent[], type: string) => events.filter((e) => e.event_type === type);
