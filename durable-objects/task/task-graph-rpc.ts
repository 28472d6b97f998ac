/**
 * @module The task object's RPC surface as its callers see it (routes, the session object, the bindings in
 * durable-objects/shared/env.ts): an interface, so they type the stub without importing the object class or anything it imports.
 */
import type { ActionPage, AnyWriteAnswer as WriteAnswer, IndexEntry, WebhookDelivery } from "../../src/contract/index.js";
import type { Action, Actor, ChildReport, ChildTaskRequest, PromptSummary, StepPage, StepQuery, TaskGetRequest } from "../../src/core/index.js";
import type { ChildCancelAnswer, ChildCreateAnswer, DeliveryAnswer } from "./outbound-calls.js";
import type { Idempotency } from "./storage/idempotency-store.js";
import type { RpcResult } from "../shared/rpc-result.js";
import type { TaskCursor } from "../shared/sse-frames.js";
import type { SubscriberHolder } from "../shared/sse-hub.js";


/** One command of a batch (or the only one of a single write). */
export interface BatchItem {
  readonly actor: Actor;
  readonly command: Record<string, unknown>;
  readonly idem: Idempotency | null;
  readonly claimNext: boolean;
  /**
   * The command is resolveWrite's: checked at the route against the core's command schemas, which would give it back
   * unchanged (test/rest/validate-once.property.test.ts), so the object's decide does not parse it again.
   */
  readonly validated?: boolean;
  /**
   * The answer leaves out the task summary (`task`): a command socket frame's, unless the frame asks for
   * `summary`. Absent (a single route, a batch request, the system's own writes): the full answer.
   */
  readonly lean?: boolean;
}

/** The RPC methods of one task DAG's object (named `<session_id>/<task_id>`). */
export interface TaskGraphRpc extends Rpc.DurableObjectBranded {
  /** agent.task_create: reserves task_id and wal_name in the session, commits task_created, confirms. */
  createTask(actor: Actor, body: Record<string, unknown>, clientIdem: Idempotency | null): Promise<RpcResult<WriteAnswer>>;
  /** Every other write: decide and commit one command (claims, step updates, task lifecycle, runs). */
  execute(actor: Actor, command: Record<string, unknown>, idem: Idempotency | null, opts?: { claimNext?: boolean; validated?: boolean }): Promise<RpcResult<WriteAnswer>>;
  /** execute, its answer as JSON text (a dispatch's as an object: the route adds the worker token). */
  executeForRoute(actor: Actor, command: Record<string, unknown>, idem: Idempotency | null, opts?: { claimNext?: boolean; validated?: boolean }): Promise<RpcResult<WriteAnswer | string>>;
  /** The answer this caller's keyed command of `commandType` already got (a retry), or null; nothing is decided. */
  storedAnswer(actor: Actor, commandType: string, idem: Idempotency): Promise<RpcResult<WriteAnswer> | null>;
  /** Group commit: commands decided in order, all written in one transaction, one answer each. */
  executeBatch(items: readonly BatchItem[]): Promise<RpcResult<WriteAnswer>[]>;
  /** agent.task_get: the DAG (or a page of it) as JSON text, or as a stream when the page is large. */
  getTask(actor: Actor, request?: TaskGetRequest, holder?: string): Promise<RpcResult<string | ReadableStream<Uint8Array>>>;
  /** agent.task_query_steps. */
  querySteps(actor: Actor, query: StepQuery): Promise<RpcResult<StepPage>>;
  /** The WAL after `afterSeq`, at most `limit` events up to the current last_wal_seq, as a stream of JSON Lines read a page at a time. */
  readWal(actor: Actor, afterSeq: number, limit: number): Promise<RpcResult<{ ndjson: ReadableStream<Uint8Array>; last_wal_seq: number }>>;
  /** GET .../events: SSE frames after `cursor`, then live ones. */
  streamEvents(actor: Actor, cursor: TaskCursor, holder: SubscriberHolder): Promise<RpcResult<ReadableStream<Uint8Array>>>;
  /** The Worker serving subscriber `id` saw its client go: free its slot. */
  dropSubscriber(id: string): Promise<void>;
  /** The compact Task DAG summary for a prompt, within a token budget. */
  summary(actor: Actor, tokenBudget: number): Promise<RpcResult<PromptSummary>>;
  /** agent.task_actions: the task's human actions, oldest first, optionally only open or only resolved ones. */
  listActions(actor: Actor, query: { status?: "open" | "resolved"; limit?: number; offset?: number }): Promise<RpcResult<ActionPage>>;
  /** agent.task_action: one action; with `waitMs` > 0 it answers once the action is resolved or the wait ends. */
  getAction(actor: Actor, actionId: string, waitMs: number, holder?: string): Promise<RpcResult<{ action: Action }>>;
  /** The session index entry; null when no task was created. */
  indexEntry(): Promise<RpcResult<IndexEntry | null>>;
  /** A parent's delegation creates its child task here (idempotent). */
  createChildTask(sessionId: string, request: ChildTaskRequest, createdByAgentId: string): Promise<ChildCreateAnswer>;
  /** A parent's delegation ended: the child task here is cancelled (or, not created yet, never will be). */
  cancelChildTask(delegationId: string, reason: string): Promise<ChildCancelAnswer>;
  /** A child task's end reaches its parent here (idempotent). */
  deliverChildResult(report: ChildReport): Promise<DeliveryAnswer>;
  /** The session graph's push of the tasks that block this one (set_blockers, as the system); an older or equal version writes nothing. */
  setBlockers(version: number, blockedBy: string[]): Promise<RpcResult<WriteAnswer>>;
  /** A failed webhook delivery is owed again from now, its tries counted afresh (not_found; invalid_transition: not failed). */
  retryWebhookDelivery(deliveryId: string): Promise<RpcResult<{ delivery: WebhookDelivery }>>;
  /** The session changed its subscriptions (an A2A push config of this task): the delivery targets are read again now. */
  refreshDeliveryTargets(): Promise<void>;
  /** Closes the command sockets of these revoked tokens, and of every token older than `generation` (0: none). */
  closeTokenSockets(tokenIds: readonly string[], generation: number): Promise<void>;
}
