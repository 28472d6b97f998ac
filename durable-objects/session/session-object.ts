/**
 * @module SessionObject: one per session. Reserves task ids and wal names atomically, and keeps the task
 * index that agent.task_list pages through and the inbox of open actions its tasks report. Never on the hot
 * path of a claim or a step update.
 */
import { DurableObject } from "cloudflare:workers";
import { ulidFactory } from "../../src/lib/ids.js";
import type { IndexEntry, LinkTasksInput, ListedTask, SessionActionPage, SessionSnapshot, TaskGraphPage, TaskLink, TaskListPage } from "../../src/contract/index.js";
import { type Action, type Actor, RUNTIME_EVENT_SCHEMA_VERSION, runtimeError } from "../../src/core/index.js";
import { SessionLinks } from "./session-links.js";
import { DEFAULT_ACTION_PAGE_LIMIT, MAX_ACTION_PAGE_LIMIT } from "../../src/contract/limits.js";
import type { IndexEntryWithActions } from "../task/open-actions.js";
import { type Env, readConfig, taskObjectName } from "../shared/env.js";
import { buildSessionSnapshot } from "./session-snapshot.js";
import { snapshotFrame } from "../shared/sse-frames.js";
import { decodePageToken, encodePageToken, MAX_SUBMITTED_PAGE_SIZE, type PageCursor } from "./submitted-page-token.js";
import { SseHub, type SubscriberHolder } from "../shared/sse-hub.js";
import { clientKey, type Idempotency, IDEMPOTENCY_TTL_MS, sameRequest } from "../task/storage/idempotency-store.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import type { PeerCredentialInfo, SessionRpc, SubmittedTaskPage, SubmittedTaskQuery, TaskListQuery } from "./session-rpc.js";
import { SessionPeers } from "./session-peers.js";
import { createSessionTables } from "./session-schema.js";
import { TaskCaps } from "./task-caps.js";

/** A reservation whose task was never confirmed is checked against the task object after this long. */
const RESERVATION_CHECK_MS = 60_000;
/** Rows kept in the session event log; a resume from before the oldest starts at the oldest. */
export const SESSION_EVENT_LOG_ROWS = 10_000;
/** Log rows read per page while a session stream catches up. */
const STREAM_PAGE = 200;

type TaskRow = { task_id: string; wal_name: string; state: string; reserved_at_ms: number; entry: string | null; seq: number };

/** How a task's index entry changed, as the session stream reports it. */
export type SnapshotChange = "created" | "updated" | "terminal";

/** One session's reservations and task index. */
export class SessionObject extends DurableObject<Env> implements SessionRpc {
  /** Live SSE subscribers of GET /v1/sessions/{sid}/events; fed by upsertTask. */
  private readonly hub: SseHub;
  /** The highest seq of the session event log (0: empty). */
  private lastEventSeq = 0;
  private readonly ulid = ulidFactory();
  /** Credentials of the session's A2A peers (POST /v1/sessions/{sid}/peers), read by its delegated steps. */
  private readonly peers = new SessionPeers(this.ctx.storage.sql);
  /** The task graph: links, the graph read, and the blockers pushed to blocked tasks. */
  private readonly links = new SessionLinks(this.ctx, this.env, (at) => this.armAt(at));
  /** Tasks per session and per A2A client. */
  private readonly taskCaps = new TaskCaps(this.ctx.storage.sql, readConfig(this.env).caps);

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.hub = new SseHub(readConfig(env).sse);
    void ctx.blockConcurrencyWhile(async () => {
      createSessionTables(this.sql);
      await this.links.start();
      this.lastEventSeq = this.sql.exec<{ n: number }>("SELECT COALESCE(MAX(seq), 0) AS n FROM session_events").one().n;
    });
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  /** Answers at once: the empty Worker → Durable Object round trip behind GET /health/object. */
  async ping(): Promise<string> {
    return "pong";
  }

  /**
   * Creates the session record with the answer its creator got. A repeat with the creation's
   * Idempotency-Key and body gets that first answer back; the key with another body is
   * idempotency_conflict; any other create of an existing session is refused.
   */
  async create(sessionId: string, createdAt: string, info: Record<string, unknown>, answer: unknown, idem: { key: string; hash: string } | null): Promise<RpcResult<{ answer: unknown; created: boolean }>> {
    const row = this.sql.exec<{ info: string }>("SELECT info FROM session").toArray()[0];
    if (row === undefined) {
      const stored = { ...info, creation: { key: idem?.key ?? null, hash: idem?.hash ?? null, answer } };
      this.sql.exec("INSERT INTO session (id, session_id, created_at, info) VALUES (1, ?, ?, ?)", sessionId, createdAt, JSON.stringify(stored));
      return ok({ answer, created: true });
    }
    const creation = (JSON.parse(row.info) as { creation?: { key: string | null; hash: string | null; answer: unknown } }).creation;
    if (idem !== null && creation?.key === idem.key) {
      if (!sameRequest(creation.hash ?? "", idem.hash)) return err(runtimeError("idempotency_conflict", "this Idempotency-Key created a session with a different request", { key: idem.key }));
      return ok({ answer: creation.answer, created: false });
    }
    return err(runtimeError("validation_error", `session ${sessionId} already exists`, { session_id: sessionId }));
  }

  /** The session record, or null when no session of this id was created. */
  async describe(): Promise<{ session_id: string; created_at: string } | null> {
    return this.sql.exec<{ session_id: string; created_at: string }>("SELECT session_id, created_at FROM session").toArray()[0] ?? null;
  }

  /**
   * Reserves a task id and a wal name atomically (task_id_conflict, path_conflict), and the create's
   * Idempotency-Key: a key that created (or is creating) a task with another request is
   * idempotency_conflict, whichever task_id the new request names. Past the session's task cap, or an A2A
   * client's (`submittedBy`, the client's agent id), it is limit_exceeded and nothing is reserved.
   */
  async reserve(taskId: string, walName: string, idem: Idempotency | null = null, submittedBy: string | null = null): Promise<RpcResult<null>> {
    const now = Date.now();
    if (idem !== null) {
      this.sql.exec("DELETE FROM create_keys WHERE created_at_ms <= ?", now - IDEMPOTENCY_TTL_MS);
      const used = this.sql.exec<{ hash: string; task_id: string }>("SELECT hash, task_id FROM create_keys WHERE key = ?", idem.key).toArray()[0];
      if (used !== undefined && (!sameRequest(used.hash, idem.hash) || used.task_id !== taskId)) {
        return err(runtimeError("idempotency_conflict", "this Idempotency-Key was used with a different request", { key: clientKey(idem) }));
      }
    }
    const taken = this.sql.exec<{ task_id: string; wal_name: string }>("SELECT task_id, wal_name FROM tasks WHERE task_id = ? OR wal_name = ?", taskId, walName).toArray();
    if (taken.some((r) => r.task_id === taskId)) return err(runtimeError("task_id_conflict", `task_id ${taskId} is already used in this session`, { task_id: taskId }));
    if (taken.length > 0) return err(runtimeError("path_conflict", `wal_name ${walName} is already used in this session; choose another`, { wal_name: walName }));
    const capped = this.taskCaps.refusal(submittedBy);
    if (capped !== null) return err(capped);
    const seq = (this.sql.exec<{ n: number }>("SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM tasks").one().n);
    // An A2A client's task is its own from the reservation on, so its cap counts tasks still being created.
    this.sql.exec("INSERT INTO tasks (task_id, wal_name, state, reserved_at_ms, seq, origin_client_agent_id) VALUES (?, ?, 'reserved', ?, ?, ?)", taskId, walName, now, seq, submittedBy);
    this.taskCaps.reserved();
    if (idem !== null) this.sql.exec("INSERT OR REPLACE INTO create_keys (key, hash, task_id, created_at_ms) VALUES (?, ?, ?, ?)", idem.key, idem.hash, taskId, now);
    await this.armAt(Date.now() + RESERVATION_CHECK_MS);
    return ok(null);
  }

  /** A child task's reservation: one its object made on an earlier try (still only reserved) is kept. */
  async reserveChild(taskId: string, walName: string): Promise<RpcResult<null>> {
    const mine = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE task_id = ? AND wal_name = ? AND state = 'reserved'", taskId, walName).one().n;
    if (mine > 0) return ok(null);
    return this.reserve(taskId, walName);
  }

  /** Drops a reservation whose create failed, and its Idempotency-Key (nothing was created under it). */
  async release(taskId: string): Promise<void> {
    const dropped = this.sql.exec("DELETE FROM tasks WHERE task_id = ? AND state = 'reserved'", taskId).rowsWritten;
    if (dropped > 0) {
      this.taskCaps.changed();
      this.sql.exec("DELETE FROM create_keys WHERE task_id = ?", taskId);
    }
  }

  /**
   * Records what a task object says of its task and replaces its open actions in the inbox (no await between:
   * one implicit transaction); an older push (lower wal_seq) never overwrites a newer one.
   */
  async upsertTask(entry: IndexEntry): Promise<void> {
    const row = this.sql.exec<TaskRow>("SELECT * FROM tasks WHERE task_id = ?", entry.task_id).toArray()[0];
    const previous = row?.entry == null ? null : (JSON.parse(row.entry) as IndexEntry);
    if (previous !== null && previous.wal_seq >= entry.wal_seq) return;
    // The open actions go to the inbox, a row each; the entry row and the event log keep their count only. An
    // entry without them (their set did not change since the last push) leaves the task's rows as they are.
    const { open_actions: open, ...listedEntry } = entry as Partial<IndexEntryWithActions> & IndexEntry;
    const values = [
      JSON.stringify(listedEntry), entry.terminal ? 1 : 0, entry.native_status, entry.status, entry.updated_at,
      entry.origin_client_agent_id ?? null, entry.thread_id ?? null, entry.parent_task_id ?? null, entry.root_task_id ?? null,
    ] as const;
    if (row === undefined) {
      const seq = this.sql.exec<{ n: number }>("SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM tasks").one().n;
      this.sql.exec(
        "INSERT INTO tasks (task_id, wal_name, state, reserved_at_ms, entry, terminal, native_status, status, updated_at, origin_client_agent_id, thread_id, parent_task_id, root_task_id, seq) VALUES (?, ?, 'confirmed', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        entry.task_id, entry.wal_name, Date.now(), ...values, seq,
      );
      this.taskCaps.changed();
    } else {
      this.sql.exec(
        "UPDATE tasks SET state = 'confirmed', entry = ?, terminal = ?, native_status = ?, status = ?, updated_at = ?, origin_client_agent_id = ?, thread_id = ?, parent_task_id = ?, root_task_id = ? WHERE task_id = ?",
        ...values, entry.task_id,
      );
    }
    if (open !== undefined) this.replaceActions(entry, open);
    this.links.taskUpdated(entry);
    this.appendEvent(listedEntry, previous === null ? "created" : entry.terminal && !previous.terminal ? "terminal" : "updated");
  }

  /** link_tasks (POST /v1/sessions/{sid}/links). */
  async linkTasks(actor: Actor, body: LinkTasksInput, idem: Idempotency | null): Promise<RpcResult<{ link: TaskLink; created: boolean }>> {
    return this.links.link(actor, body, idem);
  }

  /** unlink_tasks (DELETE /v1/sessions/{sid}/links/{link_id}). */
  async unlinkTasks(linkId: string): Promise<RpcResult<{ link: TaskLink }>> {
    return this.links.unlink(linkId);
  }

  /** GET /v1/sessions/{sid}/graph. */
  async taskGraph(query: { limit: number; cursor?: string }): Promise<RpcResult<TaskGraphPage>> {
    return this.links.graph(query);
  }

  /** The task's rows of the inbox become the open actions its entry reports. */
  private replaceActions(entry: IndexEntry, open: readonly Action[]): void {
    this.sql.exec("DELETE FROM actions WHERE task_id = ?", entry.task_id);
    for (const action of open) {
      this.sql.exec("INSERT OR REPLACE INTO actions (action_id, task_id, created_at, data) VALUES (?, ?, ?, ?)", action.action_id, entry.task_id, action.created_at, JSON.stringify(action));
    }
  }

  /** GET /v1/sessions/{sid}/actions?status=open: the open actions of the session's tasks, newest first, each with its task's title. */
  async listOpenActions(query: { limit?: number; offset?: number }): Promise<SessionActionPage> {
    const limit = Math.min(Math.max(Math.trunc(query.limit ?? DEFAULT_ACTION_PAGE_LIMIT), 1), MAX_ACTION_PAGE_LIMIT);
    const offset = Math.max(Math.trunc(query.offset ?? 0), 0);
    const total = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM actions").one().n;
    // The title as the task's latest entry says it: a retitled task's open actions show the new title.
    const rows = this.sql
      .exec<{ data: string; task_title: string }>(
        "SELECT a.data AS data, json_extract(t.entry, '$.title') AS task_title FROM actions a JOIN tasks t ON t.task_id = a.task_id ORDER BY a.created_at DESC, a.action_id DESC LIMIT ? OFFSET ?",
        limit,
        offset,
      )
      .toArray();
    const actions = rows.map((r) => ({ ...(JSON.parse(r.data) as Action), task_title: r.task_title }));
    return { actions, total, limit, offset, next_offset: offset + actions.length < total ? offset + actions.length : null };
  }

  /**
   * Appends a snapshot.updated event to the session event log (written with the index row, no await
   * between: one implicit transaction) and streams it. The log keeps the last SESSION_EVENT_LOG_ROWS rows.
   */
  private appendEvent(entry: IndexEntry, change: SnapshotChange): void {
    const seq = this.lastEventSeq + 1;
    const sessionId = this.sql.exec<{ session_id: string }>("SELECT session_id FROM session").toArray()[0]?.session_id ?? this.ctx.id.toString();
    const data = JSON.stringify({
      type: "snapshot.updated",
      eventId: this.ulid(),
      timestamp: new Date().toISOString(),
      sequence: seq,
      schemaVersion: RUNTIME_EVENT_SCHEMA_VERSION,
      sessionId,
      taskId: entry.task_id,
      nativeStatus: entry.native_status,
      status: entry.status,
      payload: { change, task: entry },
    });
    this.sql.exec("INSERT INTO session_events (seq, task_id, data) VALUES (?, ?, ?)", seq, entry.task_id, data);
    this.sql.exec("DELETE FROM session_events WHERE seq <= ?", seq - SESSION_EVENT_LOG_ROWS);
    this.lastEventSeq = seq;
    this.hub.publish(snapshotFrame(seq, data));
  }

  /**
   * GET /v1/sessions/{sid}/events: the log after `afterSeq` (from the oldest kept row when older), then live
   * rows; never ends on its own. A ReadableStream over RPC, like the task stream (see TaskGraphObject).
   */
  async streamEvents(afterSeq: number, holder: SubscriberHolder): Promise<RpcResult<ReadableStream<Uint8Array>>> {
    if ((await this.describe()) === null) return err(runtimeError("not_found", "no such session"));
    if (afterSeq > this.lastEventSeq) {
      return err(runtimeError("validation_error", `the resume point ${afterSeq} is after the end of the session's event log`, { after_seq: afterSeq, last_seq: this.lastEventSeq }));
    }
    let cursor = afterSeq;
    return this.hub.admit(() => {
      const rows = this.sql.exec<{ seq: number; data: string }>("SELECT seq, data FROM session_events WHERE seq > ? ORDER BY seq LIMIT ?", cursor, STREAM_PAGE).toArray();
      let frames = "";
      for (const r of rows) frames += snapshotFrame(r.seq, r.data);
      if (rows.length > 0) cursor = rows[rows.length - 1]!.seq;
      return { frames, next: cursor < this.lastEventSeq ? "more" : "live" };
    }, holder);
  }

  /** The Worker that serves subscriber `id` of the session's stream saw its client go: its slot is freed. */
  async dropSubscriber(id: string): Promise<void> {
    this.hub.dropById(id);
  }

  /** agent.task_list: active tasks in creation order; with include_terminal, terminal ones after them, newest first. */
  async listTasks(query: TaskListQuery): Promise<TaskListPage> {
    const limit = query.limit ?? 50;
    const offset = query.offset ?? 0;
    const where = ["state = 'confirmed'"];
    const args: (string | number)[] = [];
    if (query.include_terminal !== true) where.push("terminal = 0");
    if (query.status !== undefined) {
      where.push("(native_status = ? OR status = ?)");
      args.push(query.status, query.status);
    }
    const clause = where.join(" AND ");
    const total = this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM tasks WHERE ${clause}`, ...args).one().n;
    const rows = this.sql
      .exec<TaskRow>(`SELECT * FROM tasks WHERE ${clause} ORDER BY terminal ASC, CASE WHEN terminal = 0 THEN seq END ASC, updated_at DESC LIMIT ? OFFSET ?`, ...args, limit, offset)
      .toArray();
    const tasks = rows.map((r) => this.listed(r));
    return { tasks, total, limit, offset, next_offset: offset + tasks.length < total ? offset + tasks.length : null };
  }

  /**
   * A2A ListTasks: the tasks `client_agent_id` submitted, optionally of one thread (context) and some normalized
   * statuses, newest `updated_at` first (ties: task_id descending), read by keyset from the tasks_by_origin
   * index. The page token names the last entry of its page and the client it was given to; a token that does
   * not decode, or was given to another client, is validation_error.
   */
  async listSubmittedTasks(query: SubmittedTaskQuery): Promise<RpcResult<SubmittedTaskPage>> {
    const size = query.page_size;
    if (!Number.isInteger(size) || size < 1 || size > MAX_SUBMITTED_PAGE_SIZE) {
      return err(runtimeError("validation_error", `page_size must be an integer from 1 to ${MAX_SUBMITTED_PAGE_SIZE}`, { page_size: size }));
    }
    let after: PageCursor | null = null;
    if (query.page_token !== undefined && query.page_token !== "") {
      after = decodePageToken(query.page_token);
      if (after === null || after.client !== query.client_agent_id) {
        return err(runtimeError("validation_error", "page_token is not a page token of this list: start again without one"));
      }
    }
    const where = ["origin_client_agent_id = ?", "state = 'confirmed'"];
    const args: (string | number)[] = [query.client_agent_id];
    if (query.context_id !== undefined) {
      where.push("thread_id = ?");
      args.push(query.context_id);
    }
    if (query.statuses !== undefined) {
      if (query.statuses.length === 0) return ok({ entries: [], next_page_token: "", total_size: 0 });
      where.push(`status IN (${query.statuses.map(() => "?").join(", ")})`);
      args.push(...query.statuses);
    }
    if (query.native_statuses !== undefined) {
      if (query.native_statuses.length === 0) return ok({ entries: [], next_page_token: "", total_size: 0 });
      where.push(`native_status IN (${query.native_statuses.map(() => "?").join(", ")})`);
      args.push(...query.native_statuses);
    }
    // Entries pushed before open actions were counted have none.
    if (query.with_open_actions !== undefined) where.push(`COALESCE(json_extract(entry, '$.open_action_count'), 0) ${query.with_open_actions ? ">" : "="} 0`);
    const clause = where.join(" AND ");
    const total = this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM tasks WHERE ${clause}`, ...args).one().n;
    const keyset = after === null ? "" : " AND (updated_at, task_id) < (?, ?)";
    const keyArgs = after === null ? [] : [after.updated_at, after.task_id];
    // One row past the page tells whether another page follows.
    const rows = this.sql
      .exec<{ entry: string }>(`SELECT entry FROM tasks WHERE ${clause}${keyset} ORDER BY updated_at DESC, task_id DESC LIMIT ?`, ...args, ...keyArgs, size + 1)
      .toArray();
    const entries = rows.slice(0, size).map((r) => JSON.parse(r.entry) as IndexEntry);
    const last = entries[entries.length - 1];
    const next = rows.length > size && last !== undefined ? encodePageToken({ client: query.client_agent_id, updated_at: last.updated_at, task_id: last.task_id }) : "";
    return ok({ entries, next_page_token: next, total_size: total });
  }

  /**
   * The session snapshot: the task read model (summary counts, tasks, blocked tasks, delivery state) in the Agent Runtime snapshot shape (schemaVersion,
   * sessionId, threads, taskSummary, tasks, blockedTasks, deliveryState), plus the snake_case
   * `task_summary` counts. This runtime has no threads, so `threads` is empty.
   */
  async snapshot(): Promise<SessionSnapshot | null> {
    const session = await this.describe();
    if (session === null) return null;
    const rows = this.sql.exec<TaskRow>("SELECT * FROM tasks WHERE state = 'confirmed' ORDER BY seq").toArray().map((r) => this.listed(r));
    const actionIds = new Map<string, string[]>();
    for (const a of this.sql.exec<{ task_id: string; action_id: string }>("SELECT task_id, action_id FROM actions ORDER BY created_at, action_id")) {
      const ids = actionIds.get(a.task_id) ?? [];
      ids.push(a.action_id);
      actionIds.set(a.task_id, ids);
    }
    return buildSessionSnapshot(session, rows, actionIds);
  }

  /** An entry is stale when it still shows held steps or live runs past the task's own next deadline. */
  private listed(row: TaskRow): ListedTask {
    const entry = JSON.parse(row.entry!) as IndexEntry;
    const overdue = entry.next_deadline_at !== null && Date.parse(entry.next_deadline_at) + 5_000 < Date.now();
    return { ...entry, index_state: overdue ? "stale" : "current" };
  }

  /** POST /v1/sessions/{sid}/peers sets the credential of a peer origin; DELETE …/peers/{origin} (null) forgets it. */
  async setPeerCredential(origin: string, authorization: string | null): Promise<RpcResult<PeerCredentialInfo | { origin: string }>> {
    if ((await this.describe()) === null) return err(runtimeError("not_found", "no such session"));
    return authorization === null ? this.peers.delete(origin) : this.peers.set(origin, authorization);
  }

  /** GET /v1/sessions/{sid}/peers: the origins with a credential, never the values. */
  async listPeers(): Promise<PeerCredentialInfo[]> {
    return this.peers.list();
  }

  /** The Authorization value the session's delegated steps send to `origin`, or null. */
  async peerAuthorization(origin: string): Promise<string | null> {
    return this.peers.authorizationFor(origin);
  }

  /** The one alarm rings at `at` at the latest (an alarm already due counts as none: it is the one ringing). */
  private async armAt(at: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current <= Date.now() || current > at) await this.ctx.storage.setAlarm(at);
  }

  /** Settles old reservations (confirmed from the task object if its task exists, otherwise released) and re-sends due blocker pushes. */
  override async alarm(): Promise<void> {
    const session = await this.describe();
    const cutoff = Date.now() - RESERVATION_CHECK_MS;
    const stale = this.sql.exec<TaskRow>("SELECT * FROM tasks WHERE state = 'reserved' AND reserved_at_ms <= ?", cutoff).toArray();
    for (const row of stale) {
      if (session === null) break;
      const stub = this.env.TASK_GRAPHS.get(this.env.TASK_GRAPHS.idFromName(taskObjectName(session.session_id, row.task_id)));
      const entry = await stub.indexEntry();
      // A task object that cannot read its WAL may hold the task: its id stays reserved and is checked again later.
      if (!entry.ok) continue;
      if (entry.value === null) await this.release(row.task_id);
      else await this.upsertTask(entry.value);
    }
    const remaining = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE state = 'reserved'").one().n;
    if (remaining > 0) await this.armAt(Date.now() + RESERVATION_CHECK_MS);
    await this.links.pushDue();
  }
}


