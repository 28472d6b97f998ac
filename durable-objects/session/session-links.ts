/**
 * @module The session's task graph (typed edges between tasks; docs/model.md "The task graph"): the links link_tasks writes, the graph read, and the
 * blockers each `blocks` link puts on its blocked task. The session owns the links; the blocked task's object
 * holds the blockers as a WAL fact, which the session pushes through an outbox: the intent is stored first (one
 * row per blocked task: a version and the blocker list), pushed at once, re-sent from the session's alarm with
 * backoff until the task object acknowledges it. The task object ignores a version it already has.
 */
import { ulidFactory } from "../../src/lib/ids.js";
import type { IndexEntry, LinkTasksInput, TaskGraphNode, TaskGraphPage, TaskLink } from "../../src/contract/index.js";
import { type Actor, limitExceeded, type RuntimeError, runtimeError } from "../../src/core/index.js";
import { clientKey, type Idempotency, IDEMPOTENCY_TTL_MS, sameRequest, scopeIdempotency } from "../task/storage/idempotency-store.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import { type Env, readConfig, taskObjectName } from "../shared/env.js";
import type { TaskGraphRpc } from "../task/task-graph-rpc.js";

/** The first re-send of an unacknowledged push waits this long; each later one twice as long, up to the cap. */
export const BLOCKER_PUSH_RETRY_MS = 1_000;
const BLOCKER_PUSH_RETRY_CAP_MS = 60_000;

type LinkRow = {
  link_id: string;
  kind: string;
  from_task_id: string;
  to_task_id: string | null;
  ref: string | null;
  status: string;
  reason: string | null;
  created_at: string;
  updated_at: string;
  created_by: string;
  metadata: string | null;
};

type PushRow = { task_id: string; version: number; blocked_by: string; attempts: number; next_attempt_ms: number };

/** A graph page cursor: the last task_id of the page, opaque to callers. */
function encodeCursor(taskId: string): string {
  return btoa(JSON.stringify({ after: taskId })).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

function decodeCursor(cursor: string): string | null {
  try {
    const value = JSON.parse(atob(cursor.replaceAll("-", "+").replaceAll("_", "/"))) as { after?: unknown };
    return typeof value.after === "string" ? value.after : null;
  } catch {
    return null;
  }
}

function linkOf(row: LinkRow): TaskLink {
  return {
    link_id: row.link_id,
    kind: row.kind,
    from_task_id: row.from_task_id,
    to_task_id: row.to_task_id,
    ref: row.ref,
    status: row.status,
    reason: row.reason,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, unknown>),
    created_by: row.created_by,
    created_at: row.created_at,
    updated_at: row.updated_at,
    implicit: false,
  };
}

/** The session's links, graph and blocker outbox; the SessionObject composes one. */
export class SessionLinks {
  private readonly ulid = ulidFactory();

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    /** Makes the session's alarm ring at `at` at the latest. */
    private readonly armAt: (at: number) => Promise<void>,
  ) {}

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  /** The session's id, or null before the session was created. */
  private sessionId(): string | null {
    return this.sql.exec<{ session_id: string }>("SELECT session_id FROM session").toArray()[0]?.session_id ?? null;
  }

  private taskObject(sessionId: string, taskId: string): TaskGraphRpc {
    return this.env.TASK_GRAPHS.get(this.env.TASK_GRAPHS.idFromName(taskObjectName(sessionId, taskId)));
  }

  /**
   * Creates the tables and the index of children by parent (in the session object's blockConcurrencyWhile, after
   * the tasks table), and re-arms the alarm for the pushes not acknowledged before the object stopped.
   */
  async start(): Promise<void> {
    this.sql.exec("CREATE INDEX IF NOT EXISTS tasks_by_parent ON tasks (parent_task_id, task_id)");
    this.sql.exec(`CREATE TABLE IF NOT EXISTS links (
      link_id TEXT PRIMARY KEY,
      kind TEXT NOT NULL,
      from_task_id TEXT NOT NULL,
      to_task_id TEXT,
      ref TEXT,
      status TEXT NOT NULL,
      reason TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      created_by TEXT NOT NULL,
      metadata TEXT
    )`);
    this.sql.exec("CREATE INDEX IF NOT EXISTS links_by_from ON links (from_task_id, kind, status)");
    this.sql.exec("CREATE INDEX IF NOT EXISTS links_by_to ON links (to_task_id, kind, status)");
    // The outbox: per blocked task, the latest blocker list and whether its task object acknowledged it.
    this.sql.exec("CREATE TABLE IF NOT EXISTS blocker_pushes (task_id TEXT PRIMARY KEY, version INTEGER NOT NULL, blocked_by TEXT NOT NULL, acknowledged INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, next_attempt_ms INTEGER NOT NULL)");
    this.sql.exec("CREATE TABLE IF NOT EXISTS link_keys (key TEXT PRIMARY KEY, hash TEXT NOT NULL, link_id TEXT NOT NULL, created INTEGER NOT NULL, created_at_ms INTEGER NOT NULL)");
    const due = this.nextPushDue();
    if (due !== null) await this.armAt(due);
  }

  /** The earliest time an unacknowledged push is due (a restarted object re-arms its alarm for it), or null. */
  nextPushDue(): number | null {
    return this.sql.exec<{ at: number | null }>("SELECT MIN(next_attempt_ms) AS at FROM blocker_pushes WHERE acknowledged = 0").one().at;
  }

  /**
   * link_tasks: a new edge (created), or the live edge of the same kind, ends and ref (not created). Both tasks
   * must be the session's (reserved or created); a blocks edge may not close a cycle of blocks edges.
   */
  async link(actor: Actor, body: LinkTasksInput, idem: Idempotency | null): Promise<RpcResult<{ link: TaskLink; created: boolean }>> {
    const now = Date.now();
    const scoped = scopeIdempotency(actor, idem);
    if (scoped !== null) {
      this.sql.exec("DELETE FROM link_keys WHERE created_at_ms <= ?", now - IDEMPOTENCY_TTL_MS);
      const used = this.sql.exec<{ hash: string; link_id: string; created: number }>("SELECT hash, link_id, created FROM link_keys WHERE key = ?", scoped.key).toArray()[0];
      if (used !== undefined) {
        if (!sameRequest(used.hash, scoped.hash)) return err(runtimeError("idempotency_conflict", "this Idempotency-Key was used with a different request", { key: clientKey(scoped) }));
        const row = this.row(used.link_id);
        if (row !== undefined) return ok({ link: linkOf(row), created: used.created === 1 });
      }
    }
    for (const taskId of [body.from_task_id, body.to_task_id]) {
      if (taskId === undefined) continue;
      const known = this.sql.exec("SELECT 1 FROM tasks WHERE task_id = ?", taskId).toArray().length > 0;
      if (!known) return err(runtimeError("not_found", `no task ${taskId} in this session`, { task_id: taskId }));
    }
    const to = body.to_task_id ?? null;
    const ref = body.ref ?? null;
    const existing = this.sql
      .exec<LinkRow>("SELECT * FROM links WHERE kind = ? AND from_task_id = ? AND to_task_id IS ? AND ref IS ? AND status != 'removed'", body.kind, body.from_task_id, to, ref)
      .toArray()[0];
    if (existing !== undefined) {
      this.rememberKey(scoped, existing.link_id, false, now);
      return ok({ link: linkOf(existing), created: false });
    }
    const capped = this.linkCapReached([body.from_task_id, ...(to === null ? [] : [to])]);
    if (capped !== null) return err(capped);
    if (body.kind === "blocks" && this.reaches(to!, body.from_task_id)) {
      return err(runtimeError("dependency_cycle", `task ${to} already blocks task ${body.from_task_id}, directly or through other tasks: this link would close a cycle`, { from_task_id: body.from_task_id, to_task_id: to }));
    }
    const at = new Date(now).toISOString();
    const status = body.kind === "blocks" && this.completed(body.from_task_id) ? "resolved" : "active";
    const linkId = `lnk_${this.ulid().toLowerCase()}`;
    // No await from here to the push's row: the link, its key and the outbox row commit together.
    this.sql.exec(
      "INSERT INTO links (link_id, kind, from_task_id, to_task_id, ref, status, reason, created_at, updated_at, created_by, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      linkId, body.kind, body.from_task_id, to, ref, status, body.reason ?? null, at, at, actor.agent_id, body.metadata === undefined ? null : JSON.stringify(body.metadata),
    );
    this.rememberKey(scoped, linkId, true, now);
    const link = linkOf(this.row(linkId)!);
    if (body.kind === "blocks" && status === "active") await this.pushNow([this.enqueue(to!, now)]);
    return ok({ link, created: true });
  }

  /**
   * MAX_LINKS_PER_TASK against one more link at each of these ends: the links a task is an end of (from or to),
   * removed ones included, since their tombstones stay in the graph's history.
   */
  private linkCapReached(taskIds: readonly string[]): RuntimeError | null {
    const limit = readConfig(this.env).caps.linksPerTask;
    for (const taskId of new Set(taskIds)) {
      const links = this.sql.exec<{ n: number }>("SELECT (SELECT COUNT(*) FROM links WHERE from_task_id = ?1) + (SELECT COUNT(*) FROM links WHERE to_task_id = ?1) AS n", taskId).one().n + 1;
      if (links > limit) return limitExceeded(`task ${taskId} is an end of at most ${limit} links (removed ones count: their history is kept)`, limit, links, "MAX_LINKS_PER_TASK");
    }
    return null;
  }

  /** unlink_tasks: the link becomes a `removed` tombstone (kept for the graph's history); removing it again changes nothing. */
  async unlink(linkId: string): Promise<RpcResult<{ link: TaskLink }>> {
    const row = this.row(linkId);
    if (row === undefined) return err(runtimeError("not_found", `no link ${linkId} in this session`, { link_id: linkId }));
    if (row.status === "removed") return ok({ link: linkOf(row) });
    const now = Date.now();
    this.sql.exec("UPDATE links SET status = 'removed', updated_at = ? WHERE link_id = ?", new Date(now).toISOString(), linkId);
    if (row.kind === "blocks" && row.status === "active") await this.pushNow([this.enqueue(row.to_task_id!, now)]);
    return ok({ link: linkOf(this.row(linkId)!) });
  }

  /**
   * The live tasks a `blocks` link of `taskId` still holds (the link active: its blocker never completed). While any
   * is listed, an archived blocker's storage is kept: its retention waits until they end or the link is removed.
   */
  liveTasksHeldBy(taskId: string): string[] {
    return this.sql
      .exec<{ task_id: string }>(
        "SELECT DISTINCT t.task_id FROM links l JOIN tasks t ON t.task_id = l.to_task_id WHERE l.kind = 'blocks' AND l.from_task_id = ? AND l.status = 'active' AND t.terminal = 0 ORDER BY t.task_id LIMIT 50",
        taskId,
      )
      .toArray()
      .map((r) => r.task_id);
  }

  /**
   * Called by upsertTask with the entry it stored, in the same storage turn: a task that completed resolves
   * the blocks edges it is the blocker of, and each task they held gets a new push, sent without being awaited
   * (the blocker's own index push does not wait on other task objects; the alarm re-sends a failed one).
   */
  taskUpdated(entry: IndexEntry): void {
    if (entry.native_status !== "completed") return;
    const held = this.sql
      .exec<{ to_task_id: string }>("SELECT DISTINCT to_task_id FROM links WHERE kind = 'blocks' AND from_task_id = ? AND status = 'active'", entry.task_id)
      .toArray()
      .map((r) => r.to_task_id);
    if (held.length === 0) return;
    const now = Date.now();
    this.sql.exec("UPDATE links SET status = 'resolved', updated_at = ? WHERE kind = 'blocks' AND from_task_id = ? AND status = 'active'", new Date(now).toISOString(), entry.task_id);
    const unblocked = held.map((taskId) => this.enqueue(taskId, now));
    this.ctx.waitUntil(this.pushNow(unblocked).catch(() => undefined));
  }

  /** Pushes the given tasks' pending blocker lists now, arming the alarm first so a push that fails is re-sent. */
  async pushNow(taskIds: readonly string[]): Promise<void> {
    if (taskIds.length === 0) return;
    await this.armAt(Date.now() + BLOCKER_PUSH_RETRY_MS);
    await Promise.all(taskIds.map((taskId) => this.push(taskId)));
  }

  /** The alarm's part: re-sends every push that is due, then re-arms for the next one still unacknowledged. */
  async pushDue(): Promise<void> {
    const due = this.sql.exec<{ task_id: string }>("SELECT task_id FROM blocker_pushes WHERE acknowledged = 0 AND next_attempt_ms <= ?", Date.now()).toArray();
    await Promise.all(due.map((r) => this.push(r.task_id)));
    const next = this.nextPushDue();
    if (next !== null) await this.armAt(next);
  }

  /** GET /v1/sessions/{sid}/graph: a page of the session's tasks by task_id, with every edge from them. */
  graph(query: { limit: number; cursor?: string }): RpcResult<TaskGraphPage> {
    let after = "";
    if (query.cursor !== undefined) {
      const decoded = decodeCursor(query.cursor);
      if (decoded === null) return err(runtimeError("validation_error", "cursor is not a cursor of this graph: start again without one", { cursor: query.cursor.slice(0, 100) }));
      after = decoded;
    }
    // `+state`: without statistics SQLite would walk every confirmed row by tasks_by_state and sort them; the
    // primary key (and below, tasks_by_parent) reads the page alone.
    const rows = this.sql
      .exec<{ entry: string }>("SELECT entry FROM tasks WHERE +state = 'confirmed' AND task_id > ? ORDER BY task_id LIMIT ?", after, query.limit + 1)
      .toArray();
    const entries = rows.slice(0, query.limit).map((r) => JSON.parse(r.entry) as IndexEntry);
    const nodes: TaskGraphNode[] = entries.map((e) => ({
      task_id: e.task_id,
      title: e.title,
      status: e.status,
      native_status: e.native_status,
      parent_task_id: e.parent_task_id ?? null,
      root_task_id: e.root_task_id ?? null,
      delivery_state: e.delivery_state ?? null,
      terminal: e.terminal,
      created_at: e.created_at,
      updated_at: e.updated_at,
    }));
    const ids = JSON.stringify(entries.map((e) => e.task_id));
    const edges: TaskLink[] = this.sql
      .exec<LinkRow>("SELECT * FROM links WHERE from_task_id IN (SELECT value FROM json_each(?)) AND status != 'removed' ORDER BY from_task_id, created_at, link_id", ids)
      .toArray()
      .map(linkOf);
    // Implicit edges: a child created with parent_task_id (from its parent, on the parent's page) and the
    // sources a task's relationships name (from the task).
    const children = this.sql
      .exec<{ entry: string }>("SELECT entry FROM tasks WHERE +state = 'confirmed' AND parent_task_id IN (SELECT value FROM json_each(?)) ORDER BY parent_task_id, task_id", ids)
      .toArray()
      .map((r) => JSON.parse(r.entry) as IndexEntry);
    for (const child of children) edges.push(implicitEdge("parent_child", child.parent_task_id!, child.task_id, child.status, child));
    for (const e of entries) for (const source of e.source_task_ids ?? []) edges.push(implicitEdge("source_task", e.task_id, source, "active", e));
    const last = entries[entries.length - 1];
    return ok({ nodes, edges, next_cursor: rows.length > query.limit && last !== undefined ? encodeCursor(last.task_id) : null });
  }

  private row(linkId: string): LinkRow | undefined {
    return this.sql.exec<LinkRow>("SELECT * FROM links WHERE link_id = ?", linkId).toArray()[0];
  }

  private rememberKey(scoped: Idempotency | null, linkId: string, created: boolean, now: number): void {
    if (scoped === null) return;
    this.sql.exec("INSERT OR IGNORE INTO link_keys (key, hash, link_id, created, created_at_ms) VALUES (?, ?, ?, ?, ?)", scoped.key, scoped.hash, linkId, created ? 1 : 0, now);
  }

  /** Whether the index says the task completed. */
  private completed(taskId: string): boolean {
    return this.sql.exec<{ native_status: string | null }>("SELECT native_status FROM tasks WHERE task_id = ?", taskId).toArray()[0]?.native_status === "completed";
  }

  /** Whether `to` is reachable from `from` along active or resolved blocks edges (a new edge to → from would close a cycle). */
  private reaches(from: string, to: string): boolean {
    return (
      this.sql
        .exec(
          `WITH RECURSIVE reach(task_id) AS (
             SELECT ?
             UNION
             SELECT l.to_task_id FROM links l JOIN reach r ON l.from_task_id = r.task_id WHERE l.kind = 'blocks' AND l.status IN ('active', 'resolved')
           ) SELECT 1 FROM reach WHERE task_id = ? LIMIT 1`,
          from,
          to,
        )
        .toArray().length > 0
    );
  }

  /** Stores the task's new blocker list (its active blocks edges' blockers) as the next version to push; returns the task. */
  private enqueue(taskId: string, now: number): string {
    const blockers = this.sql
      .exec<{ from_task_id: string }>("SELECT DISTINCT from_task_id FROM links WHERE kind = 'blocks' AND to_task_id = ? AND status = 'active' ORDER BY from_task_id", taskId)
      .toArray()
      .map((r) => r.from_task_id);
    this.sql.exec(
      `INSERT INTO blocker_pushes (task_id, version, blocked_by, acknowledged, attempts, next_attempt_ms) VALUES (?, 1, ?, 0, 0, ?)
       ON CONFLICT (task_id) DO UPDATE SET version = version + 1, blocked_by = excluded.blocked_by, acknowledged = 0, attempts = 0, next_attempt_ms = excluded.next_attempt_ms`,
      taskId, JSON.stringify(blockers), now,
    );
    return taskId;
  }

  /**
   * Sends the task's unacknowledged push; acknowledged when the task object answers (a version it already had
   * counts: it answers without writing). A failure waits for the alarm with backoff. A push for a reservation
   * that was released (no such task any more) is dropped.
   */
  private async push(taskId: string): Promise<void> {
    const row = this.sql.exec<PushRow>("SELECT task_id, version, blocked_by, attempts, next_attempt_ms FROM blocker_pushes WHERE task_id = ? AND acknowledged = 0", taskId).toArray()[0];
    const sessionId = this.sessionId();
    if (row === undefined || sessionId === null) return;
    if (this.sql.exec("SELECT 1 FROM tasks WHERE task_id = ?", taskId).toArray().length === 0) {
      this.sql.exec("DELETE FROM blocker_pushes WHERE task_id = ?", taskId);
      return;
    }
    let acknowledged = false;
    try {
      const answer = await this.taskObject(sessionId, taskId).setBlockers(row.version, JSON.parse(row.blocked_by) as string[]);
      acknowledged = answer.ok;
    } catch {
      acknowledged = false;
    }
    if (acknowledged) {
      this.sql.exec("UPDATE blocker_pushes SET acknowledged = 1 WHERE task_id = ? AND version = ?", taskId, row.version);
      return;
    }
    const wait = Math.min(BLOCKER_PUSH_RETRY_MS * 2 ** row.attempts, BLOCKER_PUSH_RETRY_CAP_MS);
    const next = Date.now() + wait;
    this.sql.exec("UPDATE blocker_pushes SET attempts = attempts + 1, next_attempt_ms = ? WHERE task_id = ? AND version = ?", next, taskId, row.version);
    await this.armAt(next);
  }
}

/** An edge a task's own record implies. */
function implicitEdge(kind: "parent_child" | "source_task", from: string, to: string, status: string, entry: IndexEntry): TaskLink {
  // A child a delegated step created names that step, its delegation and its delivery on the edge.
  const delegated = kind === "parent_child" && entry.delegated_from !== undefined;
  return {
    link_id: null,
    kind,
    from_task_id: from,
    to_task_id: to,
    ref: delegated ? entry.delegated_from!.delegation_id : null,
    status,
    reason: delegated ? `delegated by step ${entry.delegated_from!.step_id}` : null,
    metadata: delegated ? { step_id: entry.delegated_from!.step_id, delegation_id: entry.delegated_from!.delegation_id, delivery_state: entry.delivery_state ?? null } : null,
    created_by: null,
    created_at: entry.created_at,
    updated_at: entry.updated_at,
    implicit: true,
  };
}
