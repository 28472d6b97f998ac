/**
 * @module The session object's RPC surface as its callers see it (routes, the task object, the bindings in
 * durable-objects/shared/env.ts): an interface, so they type the stub without importing the object class or anything it imports.
 */
import type { CreatedWebhook, IndexEntry, LinkTasksInput, Webhook, WebhookDelivery, WebhookDeliveryPage, WebhookDeliveryStatus, SessionActionPage, SessionSnapshot, TaskGraphPage, TaskLink, TaskListPage, TokenListPage } from "../../src/contract/index.js";
import type { Actor } from "../../src/core/index.js";
import type { Idempotency } from "../task/storage/idempotency-store.js";
import type { RpcResult } from "../shared/rpc-result.js";
import type { SubscriberHolder } from "../shared/sse-hub.js";
import type { MintedToken, RevocationState, SocketHolding, TokenRequest } from "./session-tokens.js";
import type { SeedResult } from "./session-bench.js";

/** Filters of agent.task_list. */
export interface TaskListQuery {
  readonly include_terminal?: boolean;
  /** Archived tasks too (left out otherwise, whatever include_terminal says). */
  readonly include_archived?: boolean;
  readonly status?: string;
  readonly limit?: number;
  readonly offset?: number;
}

/** Filters and cursor of A2A ListTasks: the tasks one client submitted. */
export interface SubmittedTaskQuery {
  /** Only tasks whose origin is this A2A client. */
  readonly client_agent_id: string;
  /** Only tasks of this thread (the A2A contextId). */
  readonly context_id?: string;
  /** Only tasks whose normalized status is one of these (an empty list matches none). */
  readonly statuses?: readonly string[];
  /** Only tasks whose native status is one of these (an empty list matches none). */
  readonly native_statuses?: readonly string[];
  /** Only tasks with (true) or without (false) an open action. */
  readonly with_open_actions?: boolean;
  /** 1..100. */
  readonly page_size: number;
  /** The `next_page_token` of the page before; absent or "" for the first page. */
  readonly page_token?: string;
}

/** A page of a client's submitted tasks, newest `updated_at` first. */
export interface SubmittedTaskPage {
  readonly entries: IndexEntry[];
  /** Opaque; "" on the last page. */
  readonly next_page_token: string;
  /** Every task matching the filters, across all pages. */
  readonly total_size: number;
}

/** A stored peer credential as a read shows it: its origin and when it was last set, never its value. */
export interface PeerCredentialInfo {
  readonly origin: string;
  readonly updated_at: string;
}

/** A subscription as a task object delivers to it: its secret or credentials held in memory only, never written by the task. */
export interface DeliveryTarget {
  readonly webhook_id: string;
  readonly kind: "webhook" | "a2a_push";
  readonly url: string;
  /** The runtime event types it receives. */
  readonly events: readonly string[];
  /** An A2A push config's task; null for a session-wide webhook. */
  readonly task_id: string | null;
  /** Events committed before this moment are not delivered to it (ISO). */
  readonly created_at: string;
  /** A webhook's `whsec_` signing secret; null for an A2A push config. */
  readonly secret: string | null;
  /** An A2A push config's token (sent as X-A2A-Notification-Token) and Authorization value; null otherwise. */
  readonly token: string | null;
  readonly authorization: string | null;
}

/** What a subscription is created from: a webhook's body, or an A2A push config of one task (the A2A route's). */
export type NewSubscription =
  | { readonly kind: "webhook"; readonly url: string; readonly events: readonly string[]; readonly description?: string }
  | { readonly kind: "a2a_push"; readonly webhook_id: string; readonly task_id: string; readonly url: string; readonly events: readonly string[]; readonly token: string | null; readonly authorization: string | null };

/** The RPC methods of one session's object. */
export interface SessionRpc extends Rpc.DurableObjectBranded {
  /** Answers at once: the empty Worker → Durable Object round trip behind GET /health/object. */
  ping(): Promise<string>;
  /** Creates the session record with the answer its creator got (or gives a keyed repeat that answer back). */
  create(
    sessionId: string,
    createdAt: string,
    info: Record<string, unknown>,
    orchestrator: { agent_id: string; run_id: string },
    ttlSeconds: number,
    idem: Idempotency | null,
  ): Promise<RpcResult<{ answer: unknown; created: boolean }>>;
  /** The session record, or null when no session of this id was created. */
  describe(): Promise<{ session_id: string; created_at: string } | null>;
  /**
   * Reserves a task id, a wal name and a create's Idempotency-Key atomically; `submittedBy` is the A2A client's agent
   * id when one creates the task (limit_exceeded: past the session's task cap or that client's).
   */
  reserve(taskId: string, walName: string, idem?: Idempotency | null, submittedBy?: string | null): Promise<RpcResult<null>>;
  /** Drops a reservation whose create failed. */
  release(taskId: string): Promise<void>;
  /**
   * Reserves a delegated step's child task id, which only that child's own object ever creates: a reservation
   * left by an earlier try of the same create is kept, not a conflict.
   */
  reserveChild(taskId: string, walName: string): Promise<RpcResult<null>>;
  /**
   * Records what a task object says of its task (the session-index replica's push), with its webhook deliveries
   * changed since the last push acknowledged (the replica GET …/webhooks/{id}/deliveries reads).
   */
  upsertTask(entry: IndexEntry, deliveries?: readonly WebhookDelivery[]): Promise<void>;
  /**
   * POST …/webhooks (kind webhook: a new id and secret) or an A2A push config (its id, replaced when it exists):
   * validation_error for a URL the outbound rules refuse; limit_exceeded past MAX_WEBHOOKS_PER_SESSION webhooks or MAX_PUSH_CONFIGS_PER_TASK push configs of a task; not_found: no session.
   * A webhook's create with `idem` (the caller-scoped Idempotency-Key) retried answers the first create again
   * (idempotency_conflict: the key with another body). An A2A push config's answer carries no secret (`""`).
   */
  createWebhook(subscription: NewSubscription, idem?: Idempotency | null): Promise<RpcResult<CreatedWebhook>>;
  /** Every subscription (both kinds; `taskId`: only that task's A2A push configs), oldest first, never a secret. */
  listWebhooks(taskId?: string): Promise<Webhook[]>;
  /** One subscription (not_found). */
  getWebhook(webhookId: string): Promise<RpcResult<Webhook>>;
  /** Removes a subscription: its deliveries still owed are recorded failed at their next try (not_found). */
  deleteWebhook(webhookId: string): Promise<RpcResult<{ webhook_id: string }>>;
  /** GET …/webhooks/{webhook_id}/deliveries, newest first (not_found: no such webhook; validation_error: a bad cursor). */
  listWebhookDeliveries(webhookId: string, query: { status?: WebhookDeliveryStatus; limit: number; after?: string }): Promise<RpcResult<WebhookDeliveryPage>>;
  /** One delivery as the replica holds it (not_found), for the retry route to find its task. */
  getWebhookDelivery(webhookId: string, deliveryId: string): Promise<RpcResult<WebhookDelivery>>;
  /** The active subscriptions a task's events go to: every webhook, and that task's A2A push configs, with their secrets. */
  deliveryTargets(taskId: string): Promise<DeliveryTarget[]>;
  /** A receiver answered 410 Gone: the subscription is disabled (kept, listed as disabled, delivers nothing more). */
  disableWebhook(webhookId: string, reason: string): Promise<void>;
  /**
   * Retention: removes an archived task's entry (its row, its inbox rows, its share of every kept count) and keeps its
   * id and wal name taken; answers who still holds it instead when a `blocks` link of it holds a live task.
   * Idempotent: a task already forgotten answers forgotten again.
   */
  forgetTask(taskId: string, walName: string, walSeq: number): Promise<ForgetAnswer>;
  /** GET /v1/sessions/{sid}/events: the session event log after `afterSeq`, then live rows. */
  streamEvents(afterSeq: number, holder: SubscriberHolder): Promise<RpcResult<ReadableStream<Uint8Array>>>;
  /** The Worker serving subscriber `id` saw its client go: free its slot. */
  dropSubscriber(id: string): Promise<void>;
  /** agent.task_list. */
  listTasks(query: TaskListQuery): Promise<TaskListPage>;
  /** A2A ListTasks: the tasks one client submitted, newest first, a page at a time (validation_error: bad page size or token). */
  listSubmittedTasks(query: SubmittedTaskQuery): Promise<RpcResult<SubmittedTaskPage>>;
  /** The session's inbox: open actions of all its tasks, newest first. */
  listOpenActions(query: { limit?: number; offset?: number }): Promise<SessionActionPage>;
  /** The session snapshot (`blockedAfter`: where the previous page of held-up tasks ended); null when no session of this id was created. */
  snapshot(blockedAfter?: number): Promise<SessionSnapshot | null>;
  /**
   * Sets (or replaces) the Authorization value sent to an A2A peer origin (not_found: no such session; validation_error:
   * too many origins).
   */
  setPeerCredential(origin: string, authorization: string): Promise<RpcResult<PeerCredentialInfo>>;
  /** DELETE /v1/sessions/{sid}/peers/{origin}: not_found when none is stored. */
  deletePeerCredential(origin: string): Promise<RpcResult<{ origin: string }>>;
  /** The peer origins with a credential and when each was set, never the values. */
  listPeers(): Promise<PeerCredentialInfo[]>;
  /** A schedule is created: listed, within MAX_SCHEDULES_PER_SESSION (limit_exceeded; not_found: no such session). */
  addSchedule(scheduleId: string): Promise<RpcResult<null>>;
  /** A schedule was deleted: no longer listed. */
  removeSchedule(scheduleId: string): Promise<void>;
  /** The ids of the session's schedules, oldest first. */
  listSchedules(): Promise<string[]>;
  /** The Authorization value for a peer origin, or null: for the outbound peer client only, never for an answer. */
  peerAuthorization(origin: string): Promise<string | null>;
  /** link_tasks: a new link (created) or the same live link again; not_found for a task outside the session, dependency_cycle. */
  linkTasks(actor: Actor, body: LinkTasksInput, idem: Idempotency | null): Promise<RpcResult<{ link: TaskLink; created: boolean }>>;
  /** unlink_tasks: the link becomes a removed tombstone; not_found for an unknown link. */
  unlinkTasks(linkId: string): Promise<RpcResult<{ link: TaskLink }>>;
  /** A page of the session's task graph (validation_error: a cursor that does not decode). */
  /** Mints a token of this session that lives `ttlSeconds`, never past `notAfterSeconds`; `tokenId` names a worker run's. */
  mintToken(request: TokenRequest, ttlSeconds: number, notAfterSeconds?: number, tokenId?: string): Promise<RpcResult<MintedToken>>;
  /** GET /v1/sessions/{sid}/tokens. */
  listTokens(limit: number, after: string | null): Promise<RpcResult<TokenListPage>>;
  /** DELETE /v1/sessions/{sid}/tokens/{token_id}. */
  revokeToken(tokenId: string): Promise<RpcResult<{ revoked: { token_id: string; revoked_at: string }; state: RevocationState }>>;
  /** POST /v1/sessions/{sid}/tokens/revoke-all: revokes every token, mints `request`. */
  revokeAllTokens(request: TokenRequest, ttlSeconds: number, notAfterSeconds?: number): Promise<RpcResult<{ minted: MintedToken; state: RevocationState }>>;
  /** The generation and revoked token ids a revocation check reads. */
  revocationState(): Promise<RevocationState>;
  /** A task object took a command socket of a token. */
  noteSocket(holding: SocketHolding): Promise<void>;
  /** Bench only (BENCH_SEED and the admin token): `count` index rows `${prefix}000000`, … copied from a confirmed task's (not_found: no such task). */
  benchSeed(templateTaskId: string, count: number, prefix: string): Promise<RpcResult<SeedResult>>;
  /** Bench only: the requests carrying index entries the object took since it started, by kind. */
  benchCounters(): Promise<{ since: string; counts: Record<string, number> }>;
  /** Bench only: one durable SQLite write (the floor under a write request); the write count. */
  benchFloorWrite(): Promise<number>;
  /** GET /v1/sessions/{sid}/graph. */
  taskGraph(query: { limit: number; cursor?: string }): Promise<RpcResult<TaskGraphPage>>;
}

/** What forgetTask did: removed the entry (or had already), or kept it for the live tasks its blocks links hold. */
export type ForgetAnswer = { readonly forgotten: true } | { readonly forgotten: false; readonly held_by: readonly string[] };
