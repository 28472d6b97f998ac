/**
 * @module Request and answer types of the SDK's calls: from the contract's request schemas, which the routes
 * validate with (z.input for what a caller sends, z.output for the parsed queries), its answer types, and the
 * core's record and view types. Types only.
 */
import type { z } from "zod";
import type {
  ActionPage,
  CancelRunBody,
  CreateSessionBody,
  CreateTaskBody,
  DispatchWorkerBody,
  FinishRunBody,
  GraphQueryParams,
  IndexEntry,
  LinkTasksBody,
  ListedTask,
  MintTokenBody,
  ProgressBody,
  ReasonBody,
  RequestActionBody,
  RespondActionBody,
  SetPeerCredentialBody,
  SessionActionPage,
  SessionSnapshot,
  SessionSnapshotQueryParams,
  StepQueryParams,
  TaskGraphPage,
  TaskLink,
  SummaryQueryParams,
  TaskListPage,
  TaskListQueryParams,
  TokenListQueryParams,
  ListedToken,
  TokenListPage,
  UpdateStepBody,
  UpdateTaskBody,
  WalQueryParams,
  Webhook,
  WebhookDeliveryQueryParams,
  LeanWriteAnswer,
  WriteAnswer,
} from "../contract/index.js";
import type { Action, RuntimeError, Step, StepStatus, TaskGetAnswer, TaskStatus, TaskSummary, WalEvent, WorkerRun } from "../core/browser.js";

export type { PromptSummary, RuntimeEvent, Step, StepPage, StepStatus, TaskPageInfo, TaskStatus, TaskSummary, WalEvent, WorkerRun } from "../core/browser.js";
export type { ErrorCode, PatchOp, RuntimeError } from "../core/browser.js";
export type { Action, ActionDecision, ActionKind, RetryPolicy } from "../core/browser.js";
/** Durable schedules: the create body, the schedule as its routes answer it, its runs, and its job.* events. */
export type { CreateScheduleInput, OccurrenceOutcome, Schedule, ScheduleList, ScheduleRun, TriggerAnswer } from "../contract/index.js";
export type { ScheduleEvent } from "../core/browser.js";
/** Signed webhooks: the create body, its answer (with the secret, once), a subscription, its deliveries. */
export type { CreatedWebhook, CreateWebhookInput, Webhook, WebhookDelivery, WebhookDeliveryPage, WebhookDeliveryStatus } from "../contract/index.js";
export type { IndexEntry, LeanWriteAnswer, ListedTask, SessionSnapshot, TaskListPage, WriteAnswer };

/**
 * The answer of a worker's hot-path write (claim, claim-next, step status, progress): the task summary (`task`)
 * is absent when the call went over a command socket (`socket` option) without `socket: { summaries: true }`.
 */
export type StepWriteAnswer = LeanWriteAnswer & { readonly task?: TaskSummary };

/** A task, as its path (`/v1/sessions/{sid}/tasks/{tid}`) or its ids. */
export type TaskRef = string | { readonly sessionId: string; readonly taskId: string };

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call (and its retries); the call rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** The Idempotency-Key of a mutating call; a fresh random one by default, reused across its retries. */
  readonly idempotencyKey?: string;
}

/** POST /v1/sessions body. */
export type CreateSessionInput = z.input<typeof CreateSessionBody>;
/** POST /v1/sessions/{sid}/tokens body; `approver` mints a token that reads the session and answers its actions. */
export type MintTokenInput = Omit<z.input<typeof MintTokenBody>, "role"> & { readonly role: z.input<typeof MintTokenBody>["role"] | "approver" };
/** POST /v1/sessions/{sid}/tasks body (agent.task_create). */
export type CreateTaskInput = z.input<typeof CreateTaskBody>;
/** One patch operation of PATCH .../tasks/{tid} (agent.task_update). */
export type PatchOpInput = z.input<typeof UpdateTaskBody>["ops"][number];
/** `{reason?}` of complete, fail, cancel, block, reopen. */
export type ReasonInput = z.input<typeof ReasonBody>;
/** POST .../workers body (agent.dispatch_worker). */
export type DispatchWorkerInput = z.input<typeof DispatchWorkerBody>;
/** POST .../runs/{run}/finish body. */
export type FinishRunInput = z.input<typeof FinishRunBody>;
/** POST .../runs/{run}/cancel body. */
export type CancelRunInput = z.input<typeof CancelRunBody>;
/** POST .../steps/{step}/status body (agent.task_update_step), with `claim_next`. */
export type UpdateStepInput = z.input<typeof UpdateStepBody>;
/** POST .../steps/{step}/progress body (agent.task_progress). */
export type ProgressInput = z.input<typeof ProgressBody>;
/** POST .../steps/{step}/actions and POST .../actions body: `{kind, prompt, input_schema?, timeout_ms?}`. */
export type RequestActionInput = z.input<typeof RequestActionBody>;
/** POST .../actions/{action_id}/respond body: `{decision, input?, comment?}`. */
export type RespondActionInput = z.input<typeof RespondActionBody>;
/** Body of POST /v1/sessions/{sid}/peers: the Authorization value delegated steps send to one A2A peer origin. */
export type SetPeerCredentialInput = z.input<typeof SetPeerCredentialBody>;
/** GET /v1/sessions/{sid}/webhooks: the session's subscriptions, oldest first (never a secret). */
export interface WebhookList {
  readonly webhooks: Webhook[];
}
/** The A2A peer origins a session holds a credential for (never the values). */
export interface PeerList {
  readonly peers: { readonly origin: string; readonly updated_at: string }[];
}

type Query<S extends z.ZodType> = Omit<z.output<S>, "access_token">;
/** GET …/webhooks/{webhook_id}/deliveries query: `status`, `limit` (1–500, default 50), `after` (a `next_cursor`). */
export type WebhookDeliveryQuery = Query<typeof WebhookDeliveryQueryParams>;
/** GET /v1/sessions/{sid}/tasks filters. */
export type TaskListQuery = Query<typeof TaskListQueryParams>;
/** GET .../steps filters (agent.task_query_steps); `status` may be one status or several. */
export type StepQuery = Omit<Query<typeof StepQueryParams>, "status"> & { readonly status?: StepStatus | readonly StepStatus[] };
/** GET .../summary query. */
export type SummaryQuery = Query<typeof SummaryQueryParams>;
/** GET .../wal query. */
export type WalQuery = Query<typeof WalQueryParams>;
/** POST /v1/sessions/{sid}/links body (link_tasks). */
export type LinkTasksRequest = z.input<typeof LinkTasksBody>;
/** GET /v1/sessions/{sid}/tokens query. */
export type TokenListQuery = z.output<typeof TokenListQueryParams>;
export type { ListedToken, TokenListPage };
/** GET /v1/sessions/{sid} query: `blocked_after` reads the next page of held-up tasks (the snapshot's `pages.blockedTasks`). */
export type SessionSnapshotQuery = Query<typeof SessionSnapshotQueryParams>;
/** GET /v1/sessions/{sid}/graph query. */
export type TaskGraphQuery = Query<typeof GraphQueryParams>;
export type { TaskGraphPage, TaskLink };

/** A token, its id (what the session lists and revokes) and when it expires. */
export interface MintedToken {
  readonly token: string;
  readonly token_id: string;
  readonly expires_at: string;
}

/** POST /v1/sessions answer. */
export interface SessionCreated {
  readonly session_id: string;
  readonly created_at: string;
  readonly orchestrator: MintedToken & { readonly agent_id: string; readonly run_id: string };
  readonly observer: MintedToken;
}

/** POST /v1/sessions/{sid}/tokens answer. */
export interface TokenMinted extends MintedToken {
  readonly role: "orchestrator" | "observer" | "approver" | "a2a_client";
  readonly agent_id: string;
  readonly run_id: string | null;
}

/** A claim that took a step. */
export interface Claimed {
  readonly step: Step;
  readonly attempt_id: string;
  readonly no_step_claimed?: undefined;
}

/** A claim-next that found nothing to take (a normal answer, not an error). */
export interface NoStepClaimed {
  readonly no_step_claimed: true;
  readonly reason: "no_ready_step" | "run_budget_spent";
  readonly step?: undefined;
  readonly attempt_id?: undefined;
}

/** POST .../steps/{step}/claim answer. */
export type ClaimStepAnswer = StepWriteAnswer & Claimed;
/** POST .../steps/claim-next answer. */
export type ClaimNextAnswer = StepWriteAnswer & (Claimed | NoStepClaimed);
/** What `claim_next: true` on a status update took next: a step, nothing, or why it could not claim. */
export type NextClaim = Claimed | NoStepClaimed | { readonly error: RuntimeError };
/** POST .../steps/{step}/status answer. */
export type UpdateStepAnswer = StepWriteAnswer & { readonly next?: NextClaim };

/** POST .../workers answer: the run and its worker token. */
export type DispatchAnswer = WriteAnswer & {
  readonly run_id: string;
  readonly agent_id: string;
  readonly run: WorkerRun;
  readonly token: string;
  /** The worker token's id: what GET/DELETE /v1/sessions/{sid}/tokens list and revoke. */
  readonly token_id: string;
  readonly expires_at: string;
};

/**
 * GET .../tasks/{tid} answer (agent.task_get): the DAG plus its task read model (`snapshot`); with `page` when it
 * is one page of a task too large for one answer (or when `limit` or `cursor` was given).
 */
export type TaskView = TaskGetAnswer;

/** GET .../tasks/{tid} query: at most `limit` steps, runs and attempts each (1–1,000), from a `page.next_cursor`. */
export interface TaskGetQuery {
  readonly limit?: number;
  readonly cursor?: string;
}

/** GET .../wal answer: the events (validated), the raw JSON Lines, and the task's last wal_seq. */
export interface WalPage {
  readonly events: WalEvent[];
  readonly text: string;
  /** The task's last wal_seq (from `x-last-wal-seq`): more pages remain while the last event is below it. */
  readonly last_wal_seq: number;
}

/** The answer of request_action and respond_action: the write answer plus the action, its id, status and expiry. */
export type ActionAnswer = WriteAnswer & {
  readonly action_id: string;
  readonly status: Action["status"];
  readonly expires_at: string;
  readonly action: Action;
};

/** GET .../tasks/{tid}/actions and GET /v1/sessions/{sid}/actions query. */
export interface ActionListQuery {
  readonly status?: Action["status"];
  /** 1–500 (default 50). */
  readonly limit?: number;
  readonly offset?: number;
}

export type { ActionPage, InboxAction } from "../contract/index.js";
/** GET /v1/sessions/{sid}/actions answer: the session's open actions, newest first. */
export type ActionInbox = SessionActionPage;

/** GET .../actions/{action_id} query: `waitMs` (0–30,000) long-polls until the action is resolved. */
export interface GetActionQuery {
  readonly waitMs?: number;
}

/** GET /v1/task-template answer. */
export interface TaskTemplate {
  readonly role: "user";
  readonly content: string;
}

/** One tool of GET /v1/tools. */
export interface ToolDescription {
  readonly name: string;
  readonly description: string;
  readonly http: { readonly method: "GET" | "POST" | "PATCH"; readonly path: string };
  readonly input_schema: Record<string, unknown>;
}

/** GET /v1/tools answer. */
export interface ToolList {
  readonly role: "admin" | "orchestrator" | "worker" | "observer" | "approver";
  readonly tools: ToolDescription[];
}

/** The `end` frame of a task's event stream: the task is terminal, or (`run_ended`) the worker run whose token opened the stream has ended. */
export interface StreamEnd {
  /** `revoked` and `expired`: the stream's token stopped holding (those ends carry no status or wal_seq). */
  readonly reason: "task_terminal" | "run_ended" | "revoked" | "expired" | (string & {});
  readonly status?: TaskStatus;
  readonly wal_seq?: number;
  /** With `run_ended`: the run that ended. */
  readonly run_id?: string;
}

/** One event of GET /v1/sessions/{sid}/events (`event: snapshot.updated`, `id: <sequence>`): a task of the session changed. */
export interface SessionEvent {
  readonly type: "snapshot.updated";
  readonly eventId: string;
  readonly timestamp: string;
  /** The session event log's seq (the frame's id). */
  readonly sequence: number;
  readonly schemaVersion: string;
  readonly sessionId: string;
  readonly taskId: string;
  readonly nativeStatus: TaskStatus;
  readonly status: string;
  readonly payload: { readonly change: "created" | "updated" | "terminal"; readonly task: IndexEntry };
}
