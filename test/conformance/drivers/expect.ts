/** @module Assertions the conformance suite shares: accepted answers, rejections that write nothing, runs. */
import { expect } from "vitest";
import type { Answer, TaskRuntimeDriver, WorkerRun } from "./driver.js";

/** The answer is accepted; returns its value. */
export function accepted<T>(a: Answer<T>): T {
  if (!a.ok) throw new Error(`expected the tool to accept, it answered ${a.code} ${JSON.stringify(a.details)}`);
  return a.value;
}

/** The tool rejects with `code` and the task's WAL and state do not change; returns the error's details. */
export async function rejected(d: TaskRuntimeDriver, act: () => Promise<Answer<unknown>>, code: string): Promise<Record<string, unknown>> {
  const wal = await d.walTypes();
  const before = await d.view();
  const a = await act();
  if (a.ok) throw new Error(`expected ${code}, the tool accepted: ${JSON.stringify(a.value)}`);
  expect(a.code, JSON.stringify(a.details)).toBe(code);
  expect(await d.walTypes()).toEqual(wal);
  expect(await d.view()).toEqual(before);
  return a.details;
}

/** A task created with these steps; returns the driver. */
export async function created(d: TaskRuntimeDriver, steps: Parameters<TaskRuntimeDriver["createTask"]>[0], extra: Record<string, unknown> = {}): Promise<TaskRuntimeDriver> {
  accepted(await d.createTask(steps, extra));
  return d;
}

/** Dispatches a worker run that must start. */
export async function worker(d: TaskRuntimeDriver, opts: Record<string, unknown> = {}): Promise<WorkerRun> {
  return accepted(await d.dispatch(opts));
}

/** Dispatches a worker and claims `stepId` with it. */
export async function holder(d: TaskRuntimeDriver, stepId: string, opts: Record<string, unknown> = {}): Promise<WorkerRun> {
  const w = await worker(d, opts);
  expect(accepted(await d.claim(w, stepId)).step_id).toBe(stepId);
  return w;
}

/** The WAL's event types written after the first `n`. */
export async function typesAfter(d: TaskRuntimeDriver, n: number): Promise<string[]> {
  return (await d.walTypes()).slice(n);
}

/** Claims and completes a ready step with a fresh worker, then ends the run so no run lingers. */
export async function done(d: TaskRuntimeDriver, id: string): Promise<void> {
  const w = await holder(d, id);
  accepted(await d.updateStep(w, id, { status: "completed", result_summary: `${id} done` }));
  accepted(await d.finishRun(w, w.run_id, "finished"));
}

/**
 * Moves the ready step `id` to `status` through transitions the task tools allow. Returns the worker that holds or held the step,
 * if any.
 */
export async function put(d: TaskRuntimeDriver, id: string, status: string): Promise<WorkerRun | null> {
  let w: WorkerRun | null = null;
  switch (status) {
    case "claimed":
      w = await holder(d, id);
      break;
    case "running":
      w = await holder(d, id);
      accepted(await d.updateStep(w, id, { status: "running" }));
      break;
    case "blocked":
    case "failed":
      w = await holder(d, id);
      accepted(await d.updateStep(w, id, { status, reason: `${status} by worker`, result_summary: `${id} ${status}` }));
      break;
    default:
      throw new Error(`cannot put a step in ${status}`);
  }
  expect((await d.view()).steps[id]!.status).toBe(status);
  return w;
}
