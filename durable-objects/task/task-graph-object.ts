/**
 * @module TaskGraphObject: one task DAG, its WAL, leases and idempotency records, as the Worker deploys it.
 * The class only composes its parts and names its RPC surface (TaskGraphRpc): the commit shell
 * (commit-shell.ts: replay → decide → append → apply → publish, the alarm), the writes
 * (idempotent-writes.ts), the reads (task-reads.ts), the long-polls on actions (action-waiters.ts) and the
 * command sockets (command-sockets.ts).
 */
import { DurableObject } from "cloudflare:workers";
import { type Actor, type ChildReport, checkRunToken, type ChildTaskRequest, type PromptSummary, runtimeError, type StepPage, type StepQuery, systemActor, type TaskGetRequest } from "../../src/core/index.js";
import type { ActionPage, AnyWriteAnswer as WriteAnswer, IndexEntry, WebhookDelivery } from "../../src/contract/index.js";
import { type Env, type RuntimeConfig, readConfig, taskObjectName } from "../shared/env.js";
import { ActionWaiters, MAX_ACTION_WAITERS, type PollAnswer } from "./action-waiters.js";
import { PeerClient } from "../peers/a2a-peer.js";
import { ChildTasks } from "./child-tasks.js";
import { CommandSockets } from "./command-sockets.js";
import { CommitShell } from "./commit-shell.js";
import { DeliveryTargets } from "./delivery-targets.js";
import { postOutbound, sendWebhook } from "../peers/webhook-sender.js";
import { a2aPushRequest } from "../peers/a2a-push.js";
import { answerText, type Idempotency } from "./storage/idempotency-store.js";
import { type ChildCancelAnswer, type ChildCreateAnswer, type DeliveryAnswer, type OutboundPorts } from "./outbound-calls.js";
import { IdempotentWrites } from "./idempotent-writes.js";
import { LargeReads } from "./large-reads.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import type { TaskCursor } from "../shared/sse-frames.js";
import { SseHub, type SubscriberHolder } from "../shared/sse-hub.js";
import { perTokenShare } from "../shared/token-slots.js";
import type { BatchItem, TaskGraphRpc } from "./task-graph-rpc.js";
import { type ActionQuery, TaskReads } from "./task-reads.js";

/** One task DAG (named `<session_id>/<task_id>`). */
export class TaskGraphObject extends DurableObject<Env> implements TaskGraphRpc {
  private readonly config: RuntimeConfig;
  /** Memory, the commit path and the alarm (its `storage` and `core` are the fault-injection tests' seams). */
  private readonly shell: CommitShell;
  /** Live SSE subscribers of GET .../events; fed by the shell after each commit. */
  private readonly hub: SseHub;
  private readonly writes: IdempotentWrites;
  private readonly reads: TaskReads;
  private readonly sockets: CommandSockets;
  /** Long-polls of GET .../actions/{action_id}?wait_ms=; answered by the shell after the commit resolving their action. */
  private readonly waiters: ActionWaiters;
  private readonly children: ChildTasks;
  /** The session's subscriptions this task's events go to (memory only). */
  private readonly targets: DeliveryTargets;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.config = readConfig(env);
    this.hub = new SseHub(this.config.sse);
    this.waiters = new ActionWaiters(MAX_ACTION_WAITERS, perTokenShare(MAX_ACTION_WAITERS, this.config.slotSharePercent));
    const sessions = env.SESSIONS;
    const tasks = env.TASK_GRAPHS;
    const sessionId = () => this.shell.state.task!.session_id;
    const taskObject = (taskId: string) => tasks.get(tasks.idFromName(taskObjectName(sessionId(), taskId)));
    // A peer's credential lives in the session (never in a WAL); it is read when a call to its origin is made.
    const peers = new PeerClient(this.config.peers, undefined, (origin) => sessions.get(sessions.idFromName(sessionId())).peerAuthorization(origin));
    const outbound: OutboundPorts = {
      createChild: (child, createdBy) => taskObject(child.task_id).createChildTask(sessionId(), child, createdBy),
      cancelChild: (childTaskId, delegationId, reason) => taskObject(childTaskId).cancelChildTask(delegationId, reason),
      deliver: (report) => taskObject(report.parent_task_id).deliverChildResult(report),
      peerSend: (cardUrl, message) => peers.send(cardUrl, message),
      peerGet: (cardUrl, remoteTaskId) => peers.get(cardUrl, remoteTaskId),
      peerCancel: (cardUrl, remoteTaskId) => peers.cancel(cardUrl, remoteTaskId),
    };
    const session = () => sessions.get(sessions.idFromName(sessionId()));
    const webhooks = this.config.webhooks;
    this.targets = new DeliveryTargets((sid, taskId) => sessions.get(sessions.idFromName(sid)).deliveryTargets(taskId));
    this.shell = new CommitShell({
      storage: { sql: ctx.storage.sql, transactionSync: (work) => ctx.storage.transactionSync(work) },
      alarms: ctx.storage,
      hub: this.hub,
      limits: this.config.limits,
      pushIndex: (entry, deliveries) => sessions.get(sessions.idFromName(this.shell.state.task!.session_id)).upsertTask(entry, deliveries.length === 0 ? undefined : deliveries),
      actionsResolved: (actions) => {
        this.waiters.resolve(actions);
        this.sockets.pushActionsResolved(this.shell.state.task!.task_id, actions);
      },
      // A run's token reads nothing more once the run has ended: its streams end and its sockets close.
      runsEnded: (runIds) => {
        this.reads.endRunStreams(runIds);
        this.sockets.closeRuns(runIds);
      },
      otherDeadline: () => this.sockets.nextExpiry(),
      outbound,
      deliveryTargets: this.targets,
      webhooks: {
        send: (target, delivery, event, state) => {
          if (target.kind === "webhook") return sendWebhook(webhooks, target, { delivery_id: delivery.delivery_id, type: event.type, timestamp: new Date(), data: event });
          // An A2A push config: the A2A status update the event means, unsigned, with the config's own token and Authorization.
          const push = a2aPushRequest(target, event, state);
          if (push === null) return Promise.resolve({ status: null, error: `an A2A push config does not take ${event.type} events of another task` });
          return postOutbound(webhooks, target.url, push.headers, push.body);
        },
        disable: (webhookId, reason) => session().disableWebhook(webhookId, reason),
      },
      // A send takes at most WEBHOOK_TIMEOUT_MS: past it and a margin, a send still unsettled died with its object.
      deliveryPolicy: { maxTries: webhooks.maxTries, retryBaseMs: webhooks.retryBaseMs, sendGuardMs: webhooks.timeoutMs + 5_000 },
      forgetTask: (sessionId, taskId, walName, walSeq) => sessions.get(sessions.idFromName(sessionId)).forgetTask(taskId, walName, walSeq),
      deleteStorage: async () => {
        await ctx.storage.deleteAll();
        // deleteAll drops the alarm too where the platform says so; never leave one behind either way.
        await ctx.storage.deleteAlarm();
      },
      snapshotEveryEvents: this.config.snapshotEveryEvents,
      idempotencyIndexKeys: this.config.idempotencyIndexKeys,
    });
    this.children = new ChildTasks(this.shell, (id) => sessions.get(sessions.idFromName(id)));
    this.writes = new IdempotentWrites(this.shell, (sessionId) => sessions.get(sessions.idFromName(sessionId)));
    this.reads = new TaskReads(this.shell, this.hub, new LargeReads(this.config.maxLargeReads, perTokenShare(this.config.maxLargeReads, this.config.slotSharePercent)), this.waiters);
    this.sockets = new CommandSockets({
      ctx,
      env,
      config: this.config,
      identity: () => this.reads.identity(),
      executeBatch: (items) => this.writes.executeBatch(items),
      spentToken: (scope) => checkRunToken(this.shell.state, { role: scope.role ?? "", run_id: scope.run ?? null }),
      expiryAdded: () => void this.shell.deadlineAdded(),
    });
    void ctx.blockConcurrencyWhile(() => this.shell.start());
  }

  // ---- RPC methods (TaskGraphRpc) ----------------------------------------------------------------

  /**
   * agent.task_create: reserves task_id and wal_name in the session, commits task_created, confirms. A retry
   * that arrives while the first create with its Idempotency-Key is still in flight waits for it and then
   * answers as a retry does (the first answer, or idempotency_conflict), not task_id_conflict.
   */
  async createTask(actor: Actor, body: Record<string, unknown>, clientIdem: Idempotency | null): Promise<RpcResult<WriteAnswer>> {
    return this.writes.createTask(actor, body, clientIdem);
  }

  /** Every other write: decide and commit one command (claims, step updates, task lifecycle, runs). */
  async execute(actor: Actor, command: Record<string, unknown>, idem: Idempotency | null, opts: { claimNext?: boolean; validated?: boolean } = {}): Promise<RpcResult<WriteAnswer>> {
    const [answer] = await this.writes.executeBatch([{ actor, command, idem, claimNext: opts.claimNext === true, validated: opts.validated === true }]);
    return answer!;
  }

  /**
   * `execute` for a single write route: the answer as its JSON text, passed through by the route (no answer object
   * cloned across the call and encoded again there); a keyed write's is the text its idempotency record holds, so
   * it is encoded once. A dispatch's stays an object: the route adds the run's worker token to it.
   */
  async executeForRoute(actor: Actor, command: Record<string, unknown>, idem: Idempotency | null, opts: { claimNext?: boolean; validated?: boolean } = {}): Promise<RpcResult<WriteAnswer | string>> {
    const answer = await this.execute(actor, command, idem, opts);
    return answer.ok && answer.value.run_id === undefined ? ok(answerText(answer.value)) : answer;
  }

  /** The answer this caller's keyed command of `commandType` already got (a retry), or null; nothing is decided. */
  async storedAnswer(actor: Actor, commandType: string, idem: Idempotency): Promise<RpcResult<WriteAnswer> | null> {
    return this.writes.storedAnswer(actor, commandType, idem);
  }

  /**
   * Group commit: commands decided in order against the live DAG, each seeing the ones before it, all
   * written in one transaction, one answer each. A rejected command writes nothing and does not undo the
   * others.
   */
  async executeBatch(items: readonly BatchItem[]): Promise<RpcResult<WriteAnswer>[]> {
    return this.writes.executeBatch(items);
  }

  /** agent.task_get after reconciling leases (a large page streamed, within TASK_MAX_LARGE_READS). */
  async getTask(actor: Actor, request: TaskGetRequest = {}, holder?: string): Promise<RpcResult<string | ReadableStream<Uint8Array>>> {
    return this.reads.getTask(actor, request, holder);
  }

  /** agent.task_query_steps after reconciling leases. */
  async querySteps(actor: Actor, query: StepQuery): Promise<RpcResult<StepPage>> {
    return this.reads.querySteps(actor, query);
  }

  /** The WAL after `afterSeq`, at most `limit` events up to the current last_wal_seq, as a stream of JSON Lines read a page at a time. */
  async readWal(actor: Actor, afterSeq: number, limit: number): Promise<RpcResult<{ ndjson: ReadableStream<Uint8Array>; last_wal_seq: number }>> {
    return this.reads.readWal(actor, afterSeq, limit);
  }

  /** GET .../events: SSE frames of the events after `cursor`, then live ones (or `end` for a terminal task). */
  async streamEvents(actor: Actor, cursor: TaskCursor, holder: SubscriberHolder): Promise<RpcResult<ReadableStream<Uint8Array>>> {
    return this.reads.streamEvents(actor, cursor, holder);
  }

  /** The Worker serving subscriber `id` of the event stream saw its client go: its slot is freed now. */
  async dropSubscriber(id: string): Promise<void> {
    this.hub.dropById(id);
  }

  /** The compact Task DAG summary for a prompt, within a token budget, after reconciling leases. */
  async summary(actor: Actor, tokenBudget: number): Promise<RpcResult<PromptSummary>> {
    return this.reads.summary(actor, tokenBudget);
  }

  /** GET .../tasks/{tid}/actions: the task's actions, oldest first, filtered by status and paged. */
  async listActions(actor: Actor, query: ActionQuery): Promise<RpcResult<ActionPage>> {
    return this.reads.listActions(actor, query);
  }

  /** GET .../tasks/{tid}/actions/{action_id}?wait_ms=: one action, long-polled until it resolves or the wait ends. */
  async getAction(actor: Actor, actionId: string, waitMs: number, holder?: string): Promise<PollAnswer> {
    return this.reads.getAction(actor, actionId, waitMs, holder);
  }

  /**
   * The session index entry, for the session's clean-up of reservations: null when no task was created,
   * storage_error while the object is broken (its task may exist).
   */
  async indexEntry(): Promise<RpcResult<IndexEntry | null>> {
    return this.reads.indexEntry();
  }

  /** A parent's delegation creates its child task here (idempotent). */
  async createChildTask(sessionId: string, request: ChildTaskRequest, createdByAgentId: string): Promise<ChildCreateAnswer> {
    return this.children.create(sessionId, request, createdByAgentId);
  }

  /** A parent's delegation ended: the child task here is cancelled (or, not created yet, never will be). */
  async cancelChildTask(delegationId: string, reason: string): Promise<ChildCancelAnswer> {
    return this.children.cancel(delegationId, reason);
  }

  /** A child task's end reaches its parent here (idempotent). */
  async deliverChildResult(report: ChildReport): Promise<DeliveryAnswer> {
    return this.children.deliver(report);
  }

  /**
   * The session graph's push of the tasks that block this one: set_blockers committed as the system, so the
   * blockers are a WAL fact (task_blockers_updated); a version already recorded answers without writing.
   */
  async setBlockers(version: number, blockedBy: string[]): Promise<RpcResult<WriteAnswer>> {
    const task = this.shell.state.task;
    if (task === null) return err(this.shell.retention.noTask());
    const [answer] = await this.writes.executeBatch([{ actor: systemActor(task.session_id), command: { type: "set_blockers", version, blocked_by: blockedBy }, idem: null, claimNext: false }]);
    return answer!;
  }

  /** A failed webhook delivery is owed again from now (the session's retry route). */
  async retryWebhookDelivery(deliveryId: string): Promise<RpcResult<{ delivery: WebhookDelivery }>> {
    return this.writes.retryWebhookDelivery(deliveryId);
  }

  /** The session changed this task's subscriptions: read them again before the next write queues deliveries. */
  async refreshDeliveryTargets(): Promise<void> {
    await this.targets.refresh(true);
  }

  /** The session's close of revoked tokens' command sockets. */
  async closeTokenSockets(tokenIds: readonly string[], generation: number): Promise<void> {
    this.sockets.closeRevoked(tokenIds, generation);
  }

  // ---- Platform hooks ----------------------------------------------------------------------------

  /** The single alarm: close the sockets of expired tokens, expire due leases and run deadlines, push a due index change, re-arm. */
  override async alarm(): Promise<void> {
    this.sockets.closeExpired(Date.now());
    await this.shell.alarm();
  }

  /** A command socket's upgrade, handed over by the socket route. */
  override async fetch(request: Request): Promise<Response> {
    return this.sockets.accept(request);
  }

  /** A frame on a command socket: run on its socket's lane, answered on the socket. */
  override async webSocketMessage(socket: WebSocket, message: string | ArrayBuffer): Promise<void> {
    await this.sockets.message(socket, message);
  }

  /** A command socket closed by its client. */
  override async webSocketClose(socket: WebSocket, _code: number, reason: string): Promise<void> {
    this.sockets.close(socket, reason);
  }

  /** A command socket failed. */
  override async webSocketError(socket: WebSocket): Promise<void> {
    this.sockets.error(socket);
  }
}
