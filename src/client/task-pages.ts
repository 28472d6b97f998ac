/** @module Joins the pages of GET .../tasks/{tid} into one answer of the whole task, as a task that fits one page is answered. */
import { RECENT_ATTEMPTS } from "../core/browser.js";
import type { TaskView } from "./types.js";

/**
 * The whole task from its pages, first to last: their steps, runs, attempts and actions one after another; the task, its
 * diagnostics and wal_seq of the last page (the newest); progress by step, the latest record of each; the
 * snapshot's lists joined, its attempts cut again to the active ones and the 50 most recent others. Pages read
 * while the task was written may show a step, run or attempt as it was at different moments, none twice.
 */
export function joinTaskPages(pages: readonly TaskView[]): TaskView {
  if (pages.length === 0) throw new RangeError("no pages to join");
  const last = pages[pages.length - 1]!;
  const all = <T>(pick: (p: TaskView) => readonly T[]): T[] => pages.flatMap((p) => [...pick(p)]);
  const progress = new Map<string, TaskView["progress"][number]>();
  for (const record of all((p) => p.progress)) progress.set(record.step_id ?? "", record);
  const attempts = all((p) => p.snapshot.attempts);
  const graph = (pick: (g: TaskView["snapshot"]["taskGraph"]) => readonly unknown[]) => all((p) => pick(p.snapshot.taskGraph));
  const { page: _page, ...rest } = last;
  return {
    ...rest,
    task: { ...last.task, root_step_ids: all((p) => p.task.root_step_ids) },
    steps: all((p) => p.steps),
    attempts: all((p) => p.attempts),
    runs: all((p) => p.runs),
    actions: all((p) => p.actions),
    progress: [...progress.values()],
    snapshot: {
      ...last.snapshot,
      task: { ...last.snapshot.task, relationships: all((p) => p.snapshot.task.relationships), artifacts: all((p) => p.snapshot.task.artifacts) },
      taskGraph: {
        nodes: graph((g) => g.nodes),
        edges: graph((g) => g.edges),
        spawnedWorkers: graph((g) => g.spawnedWorkers),
        producedArtifacts: graph((g) => g.producedArtifacts),
      } as TaskView["snapshot"]["taskGraph"],
      attempts: [...attempts.filter((a) => a.nativeStatus !== "active").slice(-RECENT_ATTEMPTS), ...attempts.filter((a) => a.nativeStatus === "active")],
      blockedTasks: all((p) => p.snapshot.blockedTasks),
    },
  };
}
