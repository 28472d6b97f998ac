/**
 * @module The session's list of its schedules (GET /v1/sessions/{sid}/schedules reads each one's object from it) and
 * its counted cap, MAX_SCHEDULES_PER_SESSION. A schedule object adds its id before it writes its schedule and removes
 * it once deleted; adding an id already listed answers ok (a create retried after a crash between the two).
 */
import { limitExceeded, type RuntimeError } from "../../src/core/index.js";

/** The schedules table of one session object. */
export class SessionSchedules {
  constructor(
    private readonly sql: SqlStorage,
    private readonly cap: number,
  ) {
    this.sql.exec("CREATE TABLE IF NOT EXISTS schedules (schedule_id TEXT PRIMARY KEY, added_at_ms INTEGER NOT NULL)");
  }

  /** Lists `scheduleId`; limit_exceeded past the cap (an id already listed is not counted again). */
  add(scheduleId: string, now: number): RuntimeError | null {
    if (this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM schedules WHERE schedule_id = ?", scheduleId).one().n > 0) return null;
    const count = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM schedules").one().n + 1;
    if (count > this.cap) return limitExceeded(`a session holds at most ${this.cap} schedules`, this.cap, count, "MAX_SCHEDULES_PER_SESSION");
    this.sql.exec("INSERT INTO schedules (schedule_id, added_at_ms) VALUES (?, ?)", scheduleId, now);
    return null;
  }

  remove(scheduleId: string): void {
    this.sql.exec("DELETE FROM schedules WHERE schedule_id = ?", scheduleId);
  }

  /** Every listed id, oldest first (at most the cap). */
  list(): string[] {
    return this.sql.exec<{ schedule_id: string }>("SELECT schedule_id FROM schedules ORDER BY added_at_ms, schedule_id").toArray().map((r) => r.schedule_id);
  }
}
