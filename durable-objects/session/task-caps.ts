/**
 * @module The session's counted task caps (docs/limits.md "Counted caps"): tasks one session holds
 * (MAX_TASKS_PER_SESSION, reserved and created) and tasks one A2A client submitted to it (MAX_TASKS_PER_A2A_CLIENT).
 */
import { limitExceeded, type RuntimeError } from "../../src/core/index.js";
import type { CountedCaps } from "../shared/env.js";

/** Counts the session's task rows against its caps; the count is taken once and kept in step with each reservation. */
export class TaskCaps {
  /** Rows of the tasks table; null: count again (after rows were dropped or added without a reservation). */
  private rows: number | null = null;

  constructor(
    private readonly sql: SqlStorage,
    private readonly caps: Pick<CountedCaps, "tasksPerSession" | "tasksPerA2aClient">,
  ) {}

  private count(): number {
    this.rows ??= this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks").one().n;
    return this.rows;
  }

  /** Why one more task may not be reserved, `submittedBy` naming the A2A client that submits it; null when it may. */
  refusal(submittedBy: string | null): RuntimeError | null {
    const { tasksPerSession, tasksPerA2aClient } = this.caps;
    const tasks = this.count() + 1;
    if (tasks > tasksPerSession) return limitExceeded(`a session holds at most ${tasksPerSession} tasks`, tasksPerSession, tasks, "MAX_TASKS_PER_SESSION");
    if (submittedBy === null) return null;
    // The tasks_by_origin index makes this a range count.
    const submitted = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE origin_client_agent_id = ?", submittedBy).one().n + 1;
    if (submitted > tasksPerA2aClient) {
      return limitExceeded(`an A2A client submits at most ${tasksPerA2aClient} tasks to a session`, tasksPerA2aClient, submitted, "MAX_TASKS_PER_A2A_CLIENT");
    }
    return null;
  }

  /** One task row was reserved. */
  reserved(): void {
    if (this.rows !== null) this.rows += 1;
  }

  /** Rows were dropped, or added other than by a reservation: count again next time. */
  changed(): void {
    this.rows = null;
  }
}
