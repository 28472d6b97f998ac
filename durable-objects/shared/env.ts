/** @module The Worker's bindings and the runtime configuration read from them. */
import type { CoreLimits } from "../../src/core/index.js";
import { DEFAULT_WEBHOOK_MAX_TRIES } from "../../src/contract/index.js";
import type { PeerLimits } from "../peers/a2a-peer.js";
import type { WebhookLimits } from "../peers/webhook-sender.js";
import type { ScheduleRpc } from "../schedule/schedule-rpc.js";
import type { SessionRpc } from "../session/session-rpc.js";
import type { TaskGraphRpc } from "../task/task-graph-rpc.js";
import { perTokenShare } from "./token-slots.js";

/**
 * Bindings from wrangler.toml ([vars], secrets, Durable Object namespaces). The namespaces are typed by the
 * objects' RPC interfaces, not their classes: the classes read this module, so naming them here made a circle.
 */
export interface Env {
  readonly TASK_GRAPHS: DurableObjectNamespace<TaskGraphRpc>;
  readonly SESSIONS: DurableObjectNamespace<SessionRpc>;
  /** One object per schedule, named `<session_id>/<schedule_id>` (scheduleObjectName). */
  readonly SCHEDULES: DurableObjectNamespace<ScheduleRpc>;
  /** HS256 key that signs every bearer token (a secret). */
  readonly TOKEN_SECRET: string;
  /** The operator's token for creating sessions and minting tokens (a secret). */
  readonly ADMIN_TOKEN: string;
  readonly STEP_LEASE_TIMEOUT_MS?: string;
  readonly MAX_STEPS_PER_TASK?: string;
  /** Milliseconds a task's fail/cancel waits for each worker run it asked to cancel (default 30,000). */
  readonly CHILD_CANCEL_TIMEOUT_MS?: string;
  readonly ACTION_TIMEOUT_MS?: string;
  readonly DELEGATE_TIMEOUT_MS?: string;
  readonly DELEGATE_RETRY_MS?: string;
  readonly DELEGATE_MAX_TRIES?: string;
  /** Actions open at once in one task (default 1,000); one more is 409 limit_exceeded. */
  readonly MAX_OPEN_ACTIONS_PER_TASK?: string;
  /** Actions one attempt of a step may ask, open and resolved (default 100). */
  readonly MAX_ACTIONS_PER_ATTEMPT?: string;
  /** Child tasks one delegated step may create over its attempts (default 100). */
  readonly MAX_CHILDREN_PER_STEP?: string;
  /** Days after its archive an archived task's storage is deleted (default 0: kept forever). */
  readonly RETENTION_DAYS?: string;
  /** Tasks one session holds, reserved and created (default 100,000). */
  readonly MAX_TASKS_PER_SESSION?: string;
  /** Tasks one A2A client may submit to a session (default 10,000). */
  readonly MAX_TASKS_PER_A2A_CLIENT?: string;
  /** Links a task may be an end of, removed ones included (default 1,000). */
  readonly MAX_LINKS_PER_TASK?: string;
  /** Messages in one JSON-RPC batch POSTed to /mcp (default 16). */
  readonly MCP_MAX_BATCH?: string;
  /** Schedules one session holds (default 100). */
  readonly MAX_SCHEDULES_PER_SESSION?: string;
  /** Milliseconds between a schedule's reads of its running occurrences' tasks (default 5,000). */
  readonly SCHEDULE_POLL_MS?: string;
  readonly SNAPSHOT_EVERY_EVENTS?: string;
  readonly IDEMPOTENCY_INDEX_KEYS?: string;
  readonly MAX_BODY_BYTES?: string;
  readonly TOKEN_TTL_SECONDS?: string;
  readonly REVOCATION_CHECK_MS?: string;
  /** Milliseconds between SSE heartbeat comments (default 15,000). */
  readonly SSE_HEARTBEAT_MS?: string;
  /** Longest life of one SSE stream before it closes and the client resumes (default 300,000). */
  readonly SSE_MAX_STREAM_MS?: string;
  /** Bytes queued for one SSE subscriber beyond which it is closed as too slow (default 262,144). */
  readonly SSE_MAX_QUEUED_BYTES?: string;
  /** Live SSE subscribers one object (a task's or a session's stream) serves at once; past it, 429 (default 64). */
  readonly SSE_MAX_SUBSCRIBERS?: string;
  /** Large task reads (pages of more than 250 records) one task object streams at once; past it, 429 (default 4). */
  readonly TASK_MAX_LARGE_READS?: string;
  /** Command sockets one task object holds at once; past it, the upgrade is answered 429 (default 64). */
  readonly SOCKET_MAX_CONNECTIONS?: string;
  /** Characters of command frames waiting in one task object, all its sockets together; past it, 1013 (default 16 MiB). */
  readonly SOCKET_MAX_QUEUED_BYTES?: string;
  /** Percent of each slot pool of an object (subscribers, sockets, long-polls, large reads) one token may hold (default 25). */
  readonly SLOT_SHARE_PER_TOKEN_PERCENT?: string;
  /** Origins allowed by CORS on /v1/*: comma-separated, or `*`; empty or unset: none. */
  readonly CORS_ORIGINS?: string;
  /** Longest wait of a blocking A2A SendMessage for its task to leave SUBMITTED (default 10,000). */
  readonly A2A_SEND_WAIT_MS?: string;
  /**
   * Hosts the runtime may call out to (A2A peers of delegated steps, webhook receivers): comma-separated `host`,
   * `host:port`, `loopback` or `*`; empty or unset: A2A_PEER_ALLOWLIST, else none.
   */
  readonly OUTBOUND_ALLOWLIST?: string;
  /** The older name of OUTBOUND_ALLOWLIST, read while OUTBOUND_ALLOWLIST is unset or empty. */
  readonly A2A_PEER_ALLOWLIST?: string;
  /** Milliseconds one HTTP call to a peer may take, body included (default 10,000). */
  readonly A2A_PEER_TIMEOUT_MS?: string;
  /** Bytes of one peer answer past which it is abandoned (default 1,048,576). */
  readonly A2A_PEER_MAX_RESPONSE_BYTES?: string;
  /** Milliseconds one webhook delivery's POST may take, body included (default 10,000). */
  readonly WEBHOOK_TIMEOUT_MS?: string;
  /** Bytes of a webhook receiver's answer read before the rest is cancelled (default 65,536). */
  readonly WEBHOOK_MAX_RESPONSE_BYTES?: string;
  /** Tries of one webhook delivery before it is recorded failed (default 8, at most 100). */
  readonly WEBHOOK_MAX_TRIES?: string;
  /** Milliseconds before a webhook delivery's second try; each later wait is 4 times the one before, up to an hour (default 5,000). */
  readonly WEBHOOK_RETRY_BASE_MS?: string;
  /** "1" serves the bench routes (/_bench/…, admin token only) that seed a session's index and read its request counters; never set in production. */
  readonly BENCH_SEED?: string;
}

/** Counted caps the objects and routes hold (docs/limits.md "Counted caps"); the core's are in `limits`. */
export interface CountedCaps {
  /** MAX_TASKS_PER_SESSION: the session's tasks, reserved and created. */
  readonly tasksPerSession: number;
  /** MAX_TASKS_PER_A2A_CLIENT: the tasks one A2A client submitted to the session. */
  readonly tasksPerA2aClient: number;
  /** MAX_LINKS_PER_TASK: the links a task is an end of. */
  readonly linksPerTask: number;
  /** MCP_MAX_BATCH: messages in one JSON-RPC batch to /mcp. */
  readonly mcpBatch: number;
  /** MAX_SCHEDULES_PER_SESSION: the session's schedules. */
  readonly schedulesPerSession: number;
}

/** Runtime configuration with the documented defaults. */
export interface RuntimeConfig {
  readonly limits: CoreLimits;
  readonly caps: CountedCaps;
  readonly maxBodyBytes: number;
  readonly tokenTtlSeconds: number;
  /** How stale an isolate's copy of a session's revocations may be (revocations.ts); open streams re-check this often. */
  readonly revocationCheckMs: number;
  readonly sse: SseConfig;
  /** Large GET .../tasks/{tid} answers one task object streams at once (TASK_MAX_LARGE_READS). */
  readonly maxLargeReads: number;
  /** Percent of each slot pool one token may hold (SLOT_SHARE_PER_TOKEN_PERCENT, 1 to 100); see token-slots.ts. */
  readonly slotSharePercent: number;
  readonly socket: SocketConfig;
  /** How long a blocking A2A SendMessage waits for its task to leave SUBMITTED (A2A_SEND_WAIT_MS). */
  readonly a2aSendWaitMs: number;
  /** A task object writes a snapshot of its state every this many WAL events (SNAPSHOT_EVERY_EVENTS). */
  readonly snapshotEveryEvents: number;
  /** A task object keeps this many Idempotency-Key fingerprints in memory at most (IDEMPOTENCY_INDEX_KEYS). */
  readonly idempotencyIndexKeys: number;
  /** Where and how delegated steps call A2A peers (OUTBOUND_ALLOWLIST, A2A_PEER_TIMEOUT_MS, A2A_PEER_MAX_RESPONSE_BYTES). */
  readonly peers: PeerLimits;
  /** Where and how webhooks are delivered (OUTBOUND_ALLOWLIST, WEBHOOK_TIMEOUT_MS, WEBHOOK_MAX_RESPONSE_BYTES, WEBHOOK_MAX_TRIES). */
  readonly webhooks: WebhookLimits;
  /** How often a schedule reads its running occurrences' tasks to learn their end (SCHEDULE_POLL_MS). */
  readonly schedulePollMs: number;
}

/** Limits of the command sockets of one task object. */
export interface SocketConfig {
  /** Sockets at once (SOCKET_MAX_CONNECTIONS). */
  readonly maxConnections: number;
  /** Frame characters waiting to be run, all sockets together (SOCKET_MAX_QUEUED_BYTES). */
  readonly maxQueuedBytes: number;
}

/** Limits of the live event streams (Server-Sent Events). */
export interface SseConfig {
  readonly heartbeatMs: number;
  readonly maxStreamMs: number;
  readonly maxQueuedBytes: number;
  /** Subscribers per object: with maxQueuedBytes, bounds what one object's streams may hold (64 × 256 KiB = 16 MiB). */
  readonly maxSubscribers: number;
  /** Subscribers one token may hold of one object (its share of maxSubscribers). */
  readonly maxPerToken: number;
}

function positiveInt(raw: string | undefined, fallback: number): number {
  const n = raw === undefined ? Number.NaN : Number(raw);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

function nonNegativeInt(raw: string | undefined, fallback: number): number {
  const n = raw === undefined ? Number.NaN : Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : fallback;
}

/** OUTBOUND_ALLOWLIST's entries; while it is unset or empty, those of its older name A2A_PEER_ALLOWLIST. */
export function outboundAllowlist(env: Pick<Env, "OUTBOUND_ALLOWLIST" | "A2A_PEER_ALLOWLIST">): string[] {
  const entries = (raw: string | undefined) => (raw ?? "").split(",").map((entry) => entry.trim()).filter((entry) => entry !== "");
  const current = entries(env.OUTBOUND_ALLOWLIST);
  return current.length > 0 ? current : entries(env.A2A_PEER_ALLOWLIST);
}

/** Reads the configuration from the bindings; a missing or malformed var falls back to its default. */
export function readConfig(env: Env): RuntimeConfig {
  const allowlist = outboundAllowlist(env);
  const slotSharePercent = Math.min(positiveInt(env.SLOT_SHARE_PER_TOKEN_PERCENT, 25), 100);
  const maxSubscribers = positiveInt(env.SSE_MAX_SUBSCRIBERS, 64);
  return {
    limits: {
      stepLeaseTimeoutMs: positiveInt(env.STEP_LEASE_TIMEOUT_MS, 60_000),
      maxStepsPerTask: positiveInt(env.MAX_STEPS_PER_TASK, 10_000),
      childCancelTimeoutMs: positiveInt(env.CHILD_CANCEL_TIMEOUT_MS, 30_000),
      actionTimeoutMs: positiveInt(env.ACTION_TIMEOUT_MS, 86_400_000),
      delegateTimeoutMs: positiveInt(env.DELEGATE_TIMEOUT_MS, 3_600_000),
      delegateRetryMs: positiveInt(env.DELEGATE_RETRY_MS, 1_000),
      delegateMaxTries: positiveInt(env.DELEGATE_MAX_TRIES, 6),
      maxOpenActionsPerTask: positiveInt(env.MAX_OPEN_ACTIONS_PER_TASK, 1_000),
      maxActionsPerAttempt: positiveInt(env.MAX_ACTIONS_PER_ATTEMPT, 100),
      maxChildrenPerStep: positiveInt(env.MAX_CHILDREN_PER_STEP, 100),
      retentionDays: nonNegativeInt(env.RETENTION_DAYS, 0),
    },
    caps: {
      tasksPerSession: positiveInt(env.MAX_TASKS_PER_SESSION, 100_000),
      tasksPerA2aClient: positiveInt(env.MAX_TASKS_PER_A2A_CLIENT, 10_000),
      linksPerTask: positiveInt(env.MAX_LINKS_PER_TASK, 1_000),
      mcpBatch: positiveInt(env.MCP_MAX_BATCH, 16),
      schedulesPerSession: positiveInt(env.MAX_SCHEDULES_PER_SESSION, 100),
    },
    maxBodyBytes: positiveInt(env.MAX_BODY_BYTES, 1_048_576),
    tokenTtlSeconds: positiveInt(env.TOKEN_TTL_SECONDS, 86_400),
    revocationCheckMs: positiveInt(env.REVOCATION_CHECK_MS, 500),
    sse: {
      heartbeatMs: positiveInt(env.SSE_HEARTBEAT_MS, 15_000),
      maxStreamMs: positiveInt(env.SSE_MAX_STREAM_MS, 300_000),
      maxQueuedBytes: positiveInt(env.SSE_MAX_QUEUED_BYTES, 262_144),
      maxSubscribers,
      maxPerToken: perTokenShare(maxSubscribers, slotSharePercent),
    },
    maxLargeReads: positiveInt(env.TASK_MAX_LARGE_READS, 4),
    slotSharePercent,
    socket: {
      maxConnections: positiveInt(env.SOCKET_MAX_CONNECTIONS, 64),
      maxQueuedBytes: positiveInt(env.SOCKET_MAX_QUEUED_BYTES, 16 * 1_048_576),
    },
    a2aSendWaitMs: positiveInt(env.A2A_SEND_WAIT_MS, 10_000),
    snapshotEveryEvents: positiveInt(env.SNAPSHOT_EVERY_EVENTS, 250),
    idempotencyIndexKeys: positiveInt(env.IDEMPOTENCY_INDEX_KEYS, 500_000),
    peers: {
      allowlist,
      timeoutMs: positiveInt(env.A2A_PEER_TIMEOUT_MS, 10_000),
      maxResponseBytes: positiveInt(env.A2A_PEER_MAX_RESPONSE_BYTES, 1_048_576),
    },
    webhooks: {
      allowlist,
      timeoutMs: positiveInt(env.WEBHOOK_TIMEOUT_MS, 10_000),
      maxResponseBytes: positiveInt(env.WEBHOOK_MAX_RESPONSE_BYTES, 65_536),
      maxTries: Math.min(positiveInt(env.WEBHOOK_MAX_TRIES, DEFAULT_WEBHOOK_MAX_TRIES), 100),
      retryBaseMs: Math.min(positiveInt(env.WEBHOOK_RETRY_BASE_MS, 5_000), 3_600_000),
    },
    schedulePollMs: positiveInt(env.SCHEDULE_POLL_MS, 5_000),
  };
}

/** The Durable Object name of a task DAG: `<session_id>/<task_id>`, so a task id is unique within its session (docs/design.md "Objects"). */
export function taskObjectName(sessionId: string, taskId: string): string {
  return `${sessionId}/${taskId}`;
}

/** The Durable Object name of a schedule: `<session_id>/<schedule_id>`, so a schedule id is unique within its session. */
export function scheduleObjectName(sessionId: string, scheduleId: string): string {
  return `${sessionId}/${scheduleId}`;
}
