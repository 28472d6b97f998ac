/**
 * @module SessionObject: one per session. Reserves task ids and wal names atomically, and keeps the task
 * index that agent.task_list pages through and the inbox of open actions its tasks report. Never on the hot
 * path of a claim or a step update. Over 400 lines: the object's RPC surface is one class, each method delegating
 * to its part (links, tokens, peers, webhooks, inbox, caps, bench hooks).
 */
import { DurableObject } from "cloudflare:workers";
import { ulidFactory } from "../../src/lib/ids.js";
import type { CreatedWebhook, IndexEntry, LinkTasksInput, SessionActionPage, Webhook, WebhookDelivery, WebhookDeliveryPage, WebhookDeliveryStatus, SessionSnapshot, TaskGraphPage, TaskLink, TaskListPage, TokenListPage } from "../../src/contract/index.js";
import { type Actor, RUNTIME_EVENT_SCHEMA_VERSION, runtimeError } from "../../src/core/index.js";
import { SessionLinks } from "./session-links.js";
import { openActionPage, replaceInboxActions } from "./session-inbox.js";
import type { IndexEntryWithActions } from "../task/open-actions.js";
import { type Env, readConfig, taskObjectName } from "../shared/env.js";
import { buildSessionSnapshot, listedTask } from "./session-snapshot.js";
import { readSnapshotParts } from "./snapshot-reads.js";
import { recordEntryChange, recordEntryRemoved } from "./session-counts.js";
import { snapshotFrame } from "../shared/sse-frames.js";
import { submittedTaskPage } from "./submitted-tasks.js";
import { SseHub, type SubscriberHolder } from "../shared/sse-hub.js";
import { clientKey, type Idempotency, IDEMPOTENCY_TTL_MS, sameRequest } from "../task/storage/idempotency-store.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import type { DeliveryTarget, ForgetAnswer, NewSubscription, PeerCredentialInfo, SessionRpc, SubmittedTaskPage, SubmittedTaskQuery, TaskListQuery } from "./session-rpc.js";
import { SessionPeers } from "./session-peers.js";
import { SessionSchedules } from "./session-schedules.js";
import { createSessionTables } from "./session-schema.js";
import { SessionWebhooks } from "./session-webhooks.js";
import { RequestCounts, type SeedResult, seedIndexRows } from "./session-bench.js";
import { TaskCaps } from "./task-caps.js";
import { WriteBatch } from "./write-batch.js";
import { type MintedToken, type RevocationState, SessionTokens, type SocketHolding, type TokenRequest } from "./session-tokens.js";

/** A reservation whose task was never confirmed is checked against the task object after this long. */
const RESERVATION_CHECK_MS = 60_000;
/** A task object that could not be told to close a revoked token's sockets is told again after this long. */
const SOCKET_CLOSE_RETRY_MS = 1_000;
/** Rows kept in the session event log; a resume from before the oldest starts at the oldest. */
export const SESSION_EVENT_LOG_ROWS = 10_000;
/** Log rows read per page while a session stream catches up. */
const STREAM_PAGE = 200;

type TaskRow = { task_id: string; wal_name: string; state: string; reserved_at_ms: number; entry: string | null; seq: number };

/** How a task's index entry changed, as the session stream reports it. */
export type SnapshotChange = "created" | "updated" | "terminal" | "removed";

/** Which terminal tasks a task list shows: none, all, all but the archived ones, or the archived ones only. */
type EndedTasks = "none" | "all" | "unarchived" | "archived";
const ENDED_CLAUSE: Record<Exclude<EndedTasks, "none">, string> = { all: "", unarchived: " AND status <> 'archived'", archived: " AND status = 'archived'" };

function endedTasksListed(query: TaskListQuery): EndedTasks {
  const terminal = query.include_terminal === true;
  const archived = query.include_archived === true;
  return terminal ? (archived ? "all" : "unarchived") : archived ? "archived" : "none";
}

/** One session's reservations and task index. */
export class SessionObject extends DurableObject<Env> implements SessionRpc {
  /** Live SSE subscribers of GET /v1/sessions/{sid}/events; fed by upsertTask. */
  private readonly hub: SseHub;
  /** The highest seq of the session event log (0: empty). */
  private lastEventSeq = 0;
  private readonly ulid = ulidFactory();
  /** Credentials of the session's A2A peers (POST /v1/sessions/{sid}/peers), read by its delegated steps. */
  private readonly peers = new SessionPeers(this.ctx.storage.sql);
  /** The runtime configuration, read once. */
  private readonly config = readConfig(this.env);
  /** The session's schedules, for their list and their cap. */
  private readonly schedules = new SessionSchedules(this.ctx.storage.sql, this.config.caps.schedulesPerSession);
  /** The task graph: links, the graph read, and the blockers pushed to blocked tasks. */
  private readonly links = new SessionLinks(this.ctx, this.env, (at) => this.armAt(at));
  /** Tasks per session and per A2A client. */
  private readonly taskCaps = new TaskCaps(this.ctx.storage.sql, this.config.caps);
  /** The session's tokens: minted, listed, revoked. */
  private readonly tokens = new SessionTokens(this.ctx.storage.sql, () => this.env.TOKEN_SECRET);
  /** Requests carrying index entries, counted for the session benchmark (benchCounters). */
  private readonly requestCounts = new RequestCounts();
  /** Reservations and index pushes that arrive together, written in one turn (write-batch.ts). */
  private readonly writes = new WriteBatch((work) => this.ctx.storage.transactionSync(work));
  /** The session's webhooks and A2A push configs, and the replica of their deliveries. */
  private readonly webhooks = new SessionWebhooks(this.ctx.storage.sql, this.config.webhooks.allowlist, this.ulid);
  /** The alarm as this object last set it (undefined: not read yet; null: none). */
  private alarmAt: number | null | undefined = undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.hub = new SseHub(this.config.sse);
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
   * Creates the session record and its first tokens (an orchestrator of `orchestrator`'s agent and run, and an
   * observer), and keeps the answer its creator got. A repeat with the creation's Idempotency-Key and body gets
   * that first answer back; the key with another body is idempotency_conflict; any other create of an existing
   * session is refused.
   */
  async create(
    sessionId: string,
    createdAt: string,
    info: Record<string, unknown>,
    orchestrator: { agent_id: string; run_id: string },
    ttlSeconds: number,
    idem: { key: string; hash: string } | null,
  ): Promise<RpcResult<{ answer: unknown; created: boolean }>> {
    const row = this.sql.exec<{ info: string }>("SELECT info FROM session").toArray()[0];
    if (row === undefined) {
      const now = Date.parse(createdAt);
      const orchestratorToken = await this.tokens.mint({ role: "orchestrator", sid: sessionId, sub: orchestrator.agent_id, run: orchestrator.run_id }, now, ttlSeconds);
      const observer = await this.tokens.mint({ role: "observer", sid: sessionId, sub: "observer", run: null }, now, ttlSeconds);
      const answer = { session_id: sessionId, created_at: createdAt, orchestrator: { ...orchestrator, ...orchestratorToken }, observer };
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

  /** Mints a token of this session that lives `ttlSeconds`, never past `notAfterSeconds` (not_found: no such session). */
  async mintToken(request: TokenRequest, ttlSeconds: number, notAfterSeconds?: number, tokenId?: string): Promise<RpcResult<MintedToken>> {
    if ((await this.describe()) === null) return err(runtimeError("not_found", "no such session"));
    return ok(await this.tokens.mint(request, Date.now(), ttlSeconds, notAfterSeconds, tokenId));
  }

  /** GET /v1/sessions/{sid}/tokens: the live tokens, oldest first. */
  async listTokens(limit: number, after: string | null): Promise<RpcResult<TokenListPage>> {
    if ((await this.describe()) === null) return err(runtimeError("not_found", "no such session"));
    return this.tokens.list(Date.now(), limit, after);
  }

  /**
   * DELETE /v1/sessions/{sid}/tokens/{token_id}: revokes one token (the sockets it holds are closed from the alarm),
   * answered with the session's new revocation state for the caller's cache.
   */
  async revokeToken(tokenId: string): Promise<RpcResult<{ revoked: { token_id: string; revoked_at: string }; state: RevocationState }>> {
    const revoked = this.tokens.revoke(tokenId, Date.now());
    if (this.tokens.hasPendingCloses()) await this.armAt(Date.now());
    return revoked.ok ? ok({ revoked: revoked.value, state: this.tokens.state(Date.now()) }) : revoked;
  }

  /** POST /v1/sessions/{sid}/tokens/revoke-all: a new generation, its first orchestrator token, and the new revocation state. */
  async revokeAllTokens(request: TokenRequest, ttlSeconds: number, notAfterSeconds?: number): Promise<RpcResult<{ minted: MintedToken; state: RevocationState }>> {
    if ((await this.describe()) === null) return err(runtimeError("not_found", "no such session"));
    this.tokens.revokeAll(Date.now());
    const minted = await this.tokens.mint(request, Date.now(), ttlSeconds, notAfterSeconds);
    if (this.tokens.hasPendingCloses()) await this.armAt(Date.now());
    return ok({ minted, state: this.tokens.state(Date.now()) });
  }

  /** What a revocation check reads (through the callers' cache, durable-objects/shared/revocations.ts). */
  async revocationState(): Promise<RevocationState> {
    return this.tokens.state(Date.now());
  }

  /** A task object took a command socket of a token: its revocation must close it there. */
  async noteSocket(holding: SocketHolding): Promise<void> {
    this.tokens.noteSocket(holding);
  }

  /** The session record; null when no session of this id was created. */
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
    const reserved = await this.writes.run(() => this.reserveNow(taskId, walName, idem, submittedBy));
    if (reserved.ok) await this.armAt(Date.now() + RESERVATION_CHECK_MS);
    return reserved;
  }

  private reserveNow(taskId: string, walName: string, idem: Idempotency | null, submittedBy: string | null): RpcResult<null> {
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
    // A task retention deleted keeps its id and wal name: they name its history, and its object answers 404 retention.
    const retired = this.sql.exec<{ task_id: string }>("SELECT task_id FROM retired_tasks WHERE task_id = ? OR wal_name = ?", taskId, walName).toArray();
    if (retired.some((r) => r.task_id === taskId)) return err(runtimeError("task_id_conflict", `task_id ${taskId} was used in this session (its storage was deleted by retention)`, { task_id: taskId, reason: "retention" }));
    if (retired.length > 0) return err(runtimeError("path_conflict", `wal_name ${walName} was used in this session (its task's storage was deleted by retention); choose another`, { wal_name: walName, reason: "retention" }));
    const capped = this.taskCaps.refusal(submittedBy);
    if (capped !== null) return err(capped);
    const seq = (this.sql.exec<{ n: number }>("SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM tasks").one().n);
    // An A2A client's task is its own from the reservation on, so its cap counts tasks still being created.
    this.sql.exec("INSERT INTO tasks (task_id, wal_name, state, reserved_at_ms, seq, origin_client_agent_id) VALUES (?, ?, 'reserved', ?, ?, ?)", taskId, walName, now, seq, submittedBy);
    this.taskCaps.reserved();
    if (idem !== null) this.sql.exec("INSERT OR REPLACE INTO create_keys (key, hash, task_id, created_at_ms) VALUES (?, ?, ?, ?)", idem.key, idem.hash, taskId, now);
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
   * Records what a task object says of its task and replaces its open actions in the inbox, with the webhook
   * deliveries it pushed (no await between: one implicit transaction); an older push (lower wal_seq) never
   * overwrites a newer entry, nor an older delivery row a newer one.
   */
  async upsertTask(entry: IndexEntry, deliveries: readonly WebhookDelivery[] = []): Promise<void> {
    this.requestCounts.add("index_push");
    await this.writes.run(() => this.storeEntry(entry, deliveries));
  }

  private storeEntry(entry: IndexEntry, deliveries: readonly WebhookDelivery[]): void {
    // A push that was in flight when retention removed the task must not list it again.
    if (this.sql.exec("SELECT 1 FROM retired_tasks WHERE task_id = ?", entry.task_id).toArray().length > 0) return;
    // Each delivery row carries its own freshness: the entry's may be older than a try recorded since.
    this.webhooks.upsertDeliveries(deliveries);
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
    recordEntryChange(this.sql, previous, entry);
    if (open !== undefined) replaceInboxActions(this.sql, entry.task_id, open);
    this.links.taskUpdated(entry);
    this.appendEvent(listedEntry, previous === null ? "created" : entry.terminal && !previous.terminal ? "terminal" : "updated");
  }

  /**
   * Retention of an archived task (docs/design.md "Archive and retention"): unless a `blocks` link of it holds a live
   * task, its row, its inbox rows and its blocker push go, every kept count moves back by what its entry added, a
   * `removed` event is logged, and its id and wal name stay taken (retired_tasks), all in one turn (no await): one
   * implicit transaction. The task object deletes its storage only after this answered forgotten.
   */
  async forgetTask(taskId: string, walName: string, walSeq: number): Promise<ForgetAnswer> {
    return this.writes.run(() => this.forgetNow(taskId, walName, walSeq));
  }

  private forgetNow(taskId: string, walName: string, walSeq: number): ForgetAnswer {
    if (this.sql.exec("SELECT 1 FROM retired_tasks WHERE task_id = ?", taskId).toArray().length > 0) return { forgotten: true };
    const heldBy = this.links.liveTasksHeldBy(taskId);
    if (heldBy.length > 0) return { forgotten: false, held_by: heldBy };
    const row = this.sql.exec<TaskRow>("SELECT * FROM tasks WHERE task_id = ?", taskId).toArray()[0];
    const previous = row?.entry == null ? null : (JSON.parse(row.entry) as IndexEntry);
    recordEntryRemoved(this.sql, previous);
    this.sql.exec("DELETE FROM tasks WHERE task_id = ?", taskId);
    this.sql.exec("DELETE FROM actions WHERE task_id = ?", taskId);
    this.sql.exec("DELETE FROM blocker_pushes WHERE task_id = ?", taskId);
    this.webhooks.forgetTask(taskId);
    this.sql.exec("INSERT INTO retired_tasks (task_id, wal_name, wal_seq, retired_at) VALUES (?, ?, ?, ?)", taskId, row?.wal_name ?? walName, walSeq, new Date().toISOString());
    this.taskCaps.changed();
    if (previous !== null) this.appendEvent(previous, "removed");
    return { forgotten: true };
  }

  /** Bench only (routes/rest/bench.ts): `count` index rows copied from a real task's (session-bench.ts). */
  async benchSeed(templateTaskId: string, count: number, prefix: string): Promise<RpcResult<SeedResult>> {
    const seeded = seedIndexRows(this.sql, templateTaskId, count, prefix);
    if (seeded.ok) this.taskCaps.changed();
    return seeded;
  }

  /**
   * Bench only (routes/rest/bench.ts): one SQLite write and nothing else, answered once durable like every write:
   * the floor under a write request (one counter row, so the probe object stays one row however long it is driven).
   */
  async benchFloorWrite(): Promise<number> {
    if (!this.floorTableMade) {
      this.sql.exec("CREATE TABLE IF NOT EXISTS bench_floor (k INTEGER PRIMARY KEY, n INTEGER NOT NULL)");
      this.floorTableMade = true;
    }
    return this.sql.exec<{ n: number }>("INSERT INTO bench_floor (k, n) VALUES (1, 1) ON CONFLICT (k) DO UPDATE SET n = n + 1 RETURNING n").one().n;
  }
  private floorTableMade = false;

  /** Bench only (routes/rest/bench.ts): the requests carrying index entries this object took since it started. */
  async benchCounters(): Promise<ReturnType<RequestCounts["read"]>> {
    return this.requestCounts.read();
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

  /** GET /v1/sessions/{sid}/actions?status=open: the inbox (session-inbox.ts). */
  async listOpenActions(query: { limit?: number; offset?: number }): Promise<SessionActionPage> {
    return openActionPage(this.sql, query);
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

  /**
   * agent.task_list: active tasks in creation order; with include_terminal, terminal ones after them, newest first;
   * archived ones (terminal, normalized status archived) only with include_archived, among the terminal ones.
   * Unfiltered, a page costs its rows (the totals are the kept counts, each part an index walk; a page of the terminal
   * tasks but the archived ones skips the archived rows it walks past); a status filter reads the tasks of that status.
   */
  async listTasks(query: TaskListQuery): Promise<TaskListPage> {
    const limit = query.limit ?? 50;
    const offset = query.offset ?? 0;
    const now = Date.now();
    const ended = endedTasksListed(query);
    if (query.status !== undefined) return this.listTasksOfStatus(query.status, ended, limit, offset, now);
    const kept = this.sql.exec<{ active: number; terminal: number; archived: number }>("SELECT active, terminal, archived FROM task_counts WHERE id = 1").one();
    const endedTotal = { none: 0, all: kept.terminal, unarchived: kept.terminal - kept.archived, archived: kept.archived }[ended];
    const total = kept.active + endedTotal;
    const entries: string[] = [];
    if (offset < kept.active) {
      for (const r of this.sql.exec<{ entry: string }>("SELECT entry FROM tasks WHERE state = 'confirmed' AND terminal = 0 ORDER BY seq LIMIT ? OFFSET ?", limit, offset)) entries.push(r.entry);
    }
    if (ended !== "none" && entries.length < limit) {
      const after = Math.max(0, offset - kept.active);
      const page = `SELECT entry FROM tasks WHERE terminal = 1${ENDED_CLAUSE[ended]} ORDER BY updated_at DESC LIMIT ? OFFSET ?`;
      for (const r of this.sql.exec<{ entry: string }>(page, limit - entries.length, after)) entries.push(r.entry);
    }
    const tasks = entries.map((entry) => listedTask(entry, now));
    return { tasks, total, limit, offset, next_offset: offset + tasks.length < total ? offset + tasks.length : null };
  }

  /** The task list of one status (native or normalized), in the list's order. */
  private listTasksOfStatus(status: string, ended: EndedTasks, limit: number, offset: number, now: number): TaskListPage {
    const terminal = ended === "none" ? " AND terminal = 0" : ended === "all" ? "" : ` AND (terminal = 0 OR (terminal = 1${ENDED_CLAUSE[ended]}))`;
    const clause = `state = 'confirmed'${terminal} AND (native_status = ? OR status = ?)`;
    const total = this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM tasks WHERE ${clause}`, status, status).one().n;
    const rows = this.sql
      .exec<TaskRow>(`SELECT * FROM tasks WHERE ${clause} ORDER BY terminal ASC, CASE WHEN terminal = 0 THEN seq END ASC, updated_at DESC LIMIT ? OFFSET ?`, status, status, limit, offset)
      .toArray();
    const tasks = rows.map((r) => listedTask(r.entry!, now));
    return { tasks, total, limit, offset, next_offset: offset + tasks.length < total ? offset + tasks.length : null };
  }

  /** A2A ListTasks: the tasks one client submitted (submitted-tasks.ts). */
  async listSubmittedTasks(query: SubmittedTaskQuery): Promise<RpcResult<SubmittedTaskPage>> {
    return submittedTaskPage(this.sql, query);
  }

  /**
   * The session snapshot (session-snapshot.ts): the kept counts and bounded lists in the Agent Runtime snapshot
   * shape; `blockedAfter` pages on through the held-up tasks. Its cost does not grow with the session.
   */
  async snapshot(blockedAfter = 0): Promise<SessionSnapshot | null> {
    const session = await this.describe();
    if (session === null) return null;
    return buildSessionSnapshot(session, readSnapshotParts(this.sql, session, Date.now(), blockedAfter));
  }

  /** POST /v1/sessions/{sid}/peers: sets the credential of a peer origin (not_found: no such session). */
  async setPeerCredential(origin: string, authorization: string): Promise<RpcResult<PeerCredentialInfo>> {
    if ((await this.describe()) === null) return err(runtimeError("not_found", "no such session"));
    return this.peers.set(origin, authorization);
  }

  /** DELETE /v1/sessions/{sid}/peers/{origin}: forgets the credential of a peer origin. */
  async deletePeerCredential(origin: string): Promise<RpcResult<{ origin: string }>> {
    return this.peers.delete(origin);
  }

  /** A schedule of this session is created: listed, within MAX_SCHEDULES_PER_SESSION (not_found: no such session). */
  async addSchedule(scheduleId: string): Promise<RpcResult<null>> {
    if ((await this.describe()) === null) return err(runtimeError("not_found", "no such session"));
    const refused = this.schedules.add(scheduleId, Date.now());
    return refused === null ? ok(null) : err(refused);
  }

  /** A schedule of this session was deleted. */
  async removeSchedule(scheduleId: string): Promise<void> {
    this.schedules.remove(scheduleId);
  }

  /** The ids of the session's schedules, oldest first. */
  async listSchedules(): Promise<string[]> {
    return this.schedules.list();
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
    // Kept in memory: only this object sets its alarm, and reading it back on every reservation cost a storage call.
    if (this.alarmAt === undefined) this.alarmAt = await this.ctx.storage.getAlarm();
    const current = this.alarmAt;
    if (current === null || current <= Date.now() || current > at) {
      this.alarmAt = at;
      await this.ctx.storage.setAlarm(at);
    }
  }

  /** Settles old reservations (confirmed from the task object if its task exists, otherwise released) and re-sends due blocker pushes. */
  override async alarm(): Promise<void> {
    // The alarm that rang is spent: the next armAt sets one.
    this.alarmAt = null;
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
    if (session !== null && this.tokens.hasPendingCloses()) {
      const left = await this.tokens.sendCloses(async (taskId, tokenIds, generation) => {
        await this.env.TASK_GRAPHS.get(this.env.TASK_GRAPHS.idFromName(taskObjectName(session.session_id, taskId))).closeTokenSockets(tokenIds, generation);
      });
      if (left) await this.armAt(Date.now() + SOCKET_CLOSE_RETRY_MS);
    }
  }

  // ---- Webhook subscriptions (session-webhooks.ts) ------------------------------------------------

  /**
   * POST …/webhooks, or an A2A push config of a task (not_found: no session; validation_error: a refused URL;
   * limit_exceeded: MAX_WEBHOOKS_PER_SESSION webhooks, MAX_PUSH_CONFIGS_PER_TASK push configs of a task). A push config's task is told to read its targets again.
   */
  async createWebhook(subscription: NewSubscription, idem: Idempotency | null = null): Promise<RpcResult<CreatedWebhook>> {
    if ((await this.describe()) === null) return err(runtimeError("not_found", "no such session"));
    const created = this.webhooks.create(subscription, new Date(), idem);
    if (created.ok && subscription.kind === "a2a_push") await this.refreshTargets(subscription.task_id);
    return created;
  }

  async listWebhooks(taskId?: string): Promise<Webhook[]> {
    return this.webhooks.list(taskId);
  }

  async getWebhook(webhookId: string): Promise<RpcResult<Webhook>> {
    return found(this.webhooks.get(webhookId), webhookId);
  }

  async deleteWebhook(webhookId: string): Promise<RpcResult<{ webhook_id: string }>> {
    const removed = this.webhooks.delete(webhookId);
    if (removed?.task_id != null) await this.refreshTargets(removed.task_id);
    return removed === undefined ? found(removed, webhookId) : ok({ webhook_id: webhookId });
  }

  async listWebhookDeliveries(webhookId: string, query: { status?: WebhookDeliveryStatus; limit: number; after?: string }): Promise<RpcResult<WebhookDeliveryPage>> {
    return this.webhooks.deliveries(webhookId, query);
  }

  async getWebhookDelivery(webhookId: string, deliveryId: string): Promise<RpcResult<WebhookDelivery>> {
    const delivery = this.webhooks.delivery(webhookId, deliveryId);
    return delivery === undefined ? err(runtimeError("not_found", `no delivery ${deliveryId} of webhook ${webhookId}`, { webhook_id: webhookId, delivery_id: deliveryId })) : ok(delivery);
  }

  /** For task objects only: the targets carry their secrets and credentials. */
  async deliveryTargets(taskId: string): Promise<DeliveryTarget[]> {
    return this.webhooks.targets(taskId);
  }

  /** Only a task object disables (its receiver answered 410), and it reads its targets again itself: nothing to tell it. */
  async disableWebhook(webhookId: string, reason: string): Promise<void> {
    this.webhooks.disable(webhookId, reason);
  }

  /** Tells a task's object its A2A push configs changed; a task that cannot be told now reads them on its own later. */
  private async refreshTargets(taskId: string): Promise<void> {
    const session = await this.describe();
    if (session === null) return;
    try {
      await this.env.TASK_GRAPHS.get(this.env.TASK_GRAPHS.idFromName(taskObjectName(session.session_id, taskId))).refreshDeliveryTargets();
    } catch (e) {
      console.warn(`the task ${taskId} was not told of its changed push configs: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}

/** A subscription found, or not_found naming it. */
function found(webhook: Webhook | undefined, webhookId: string): RpcResult<Webhook> {
  return webhook === undefined ? err(runtimeError("not_found", `no webhook ${webhookId} in this session`, { webhook_id: webhookId })) : ok(webhook);
}


