/**
 * @module Answer types the service builds and the SDK returns: the session index row, the task list page, the
 * session snapshot, the write answer, a batch result and the pages of human actions. Types only.
 */
import type { Action, DeliveryState, NormalizedTaskStatus, StepStatus, TaskStatus, TaskSummary } from "../core/index.js";

/**
 * A write answer without the task summary: what a command socket frame answers unless it sends `"summary": true`
 * (the events written, the task's wal_seq after them, and the command's own fields: a claimed step, `next`, …).
 */
export interface LeanWriteAnswer {
  readonly event_ids: string[];
  readonly wal_seq: number;
}

/** What every write answers with (the task summary, the event ids written, wal_seq); each operation's answer adds its own fields. */
export interface WriteAnswer extends LeanWriteAnswer {
  readonly task: TaskSummary;
}

/**
 * A write answer of any command, as the task object builds it: the shape plus whatever the command produced;
 * `task` is absent only from a lean answer (a socket frame's without `summary`).
 */
export interface AnyWriteAnswer extends LeanWriteAnswer {
  readonly task?: TaskSummary;
  readonly [extra: string]: unknown;
}

/** One result of a batch (`POST .../batch` or a command-socket frame): the command's answer or its error envelope, with the status its single route would give. */
export interface BatchResult {
  readonly ok: boolean;
  readonly status: number;
  readonly body: unknown;
}

/** One task in the session index (what a task object tells its session about the task). */
export interface IndexEntry {
  readonly task_id: string;
  readonly wal_name: string;
  readonly title: string;
  readonly native_status: TaskStatus;
  readonly status: NormalizedTaskStatus;
  readonly step_counts: Record<StepStatus, number>;
  readonly total_steps: number;
  readonly active_runs: number;
  readonly lost_attempts: number;
  readonly terminal: boolean;
  readonly created_at: string;
  readonly updated_at: string;
  readonly wal_seq: number;
  /** When the task's own alarm is due; an index entry still claiming held steps past it is stale. */
  readonly next_deadline_at: string | null;
  /** How many of the task's actions are open (absent in entries pushed before actions existed). */
  readonly open_action_count?: number;
  /** The A2A client that submitted the task (its origin), null for an orchestrator's own task; absent in entries pushed before origins existed. */
  readonly origin_client_agent_id?: string | null;
  /** The task's thread (an A2A contextId for a submitted task); absent in entries pushed before it was listed. */
  readonly thread_id?: string | null;
  /** The task's parent and root (decomposition into child tasks); absent in entries pushed before the task graph read them. */
  readonly parent_task_id?: string | null;
  readonly root_task_id?: string | null;
  /** Tasks the task's `relationships` name as its sources (source_task); absent or empty when none. */
  readonly source_task_ids?: string[];
  /** A child task's delegation (the parent's step), absent for any other task. */
  readonly delegated_from?: { readonly task_id: string; readonly step_id: string; readonly delegation_id: string };
  /** A child task's delivery of its result to its parent (null while it runs), absent for any other task. */
  readonly delivery_state?: DeliveryState | null;
}

/** An edge of the session's task graph (link_tasks, or implied by a task's parent or relationships). */
export interface TaskLink {
  /** null for an implicit edge. */
  readonly link_id: string | null;
  readonly kind: string;
  readonly from_task_id: string;
  readonly to_task_id: string | null;
  readonly ref: string | null;
  /**
   * A blocks edge: active (its blocker has not completed), resolved (it has), removed (unlinked). Other explicit
   * edges: active or removed. An implicit parent_child edge: the child's normalized status.
   */
  readonly status: string;
  readonly reason: string | null;
  readonly metadata: Record<string, unknown> | null;
  /** The agent that linked it; null for an implicit edge. */
  readonly created_by: string | null;
  readonly created_at: string;
  readonly updated_at: string;
  /** True when the edge comes from a task's own record (parent_task_id, relationships), not from link_tasks. */
  readonly implicit: boolean;
}

/** A node of the session's task graph: a task as the session index knows it. */
export interface TaskGraphNode {
  readonly task_id: string;
  readonly title: string;
  readonly status: NormalizedTaskStatus;
  readonly native_status: TaskStatus;
  readonly parent_task_id: string | null;
  readonly root_task_id: string | null;
  /** A child task's delivery of its result to its parent (delivery_state: pending, delivered, failed or parent_missing); null for any other task and while it runs. */
  readonly delivery_state: DeliveryState | null;
  readonly terminal: boolean;
  readonly created_at: string;
  readonly updated_at: string;
}

/** A page of GET /v1/sessions/{sid}/graph: nodes by task_id, and the edges from them. */
export interface TaskGraphPage {
  readonly nodes: TaskGraphNode[];
  readonly edges: TaskLink[];
  readonly next_cursor: string | null;
}

/** One row of agent.task_list: the index entry plus whether it may lag the task. */
export type ListedTask = IndexEntry & { readonly index_state: "current" | "stale" | "reserved" };

/** A page of agent.task_list. */
export interface TaskListPage {
  readonly tasks: ListedTask[];
  readonly total: number;
  readonly limit: number;
  readonly offset: number;
  readonly next_offset: number | null;
}

/** A task of the session as the snapshot schema's compact `task`; status `stale` when its index entry may lag the task. */
export interface CompactTask {
  taskId: string;
  sessionId: string;
  title: string;
  status: NormalizedTaskStatus;
  nativeStatus: TaskStatus;
  progress: { steps: { [count in "total" | StepStatus]: number }; activeRuns: number };
  createdAt: string;
  updatedAt: string;
}

/**
 * The session snapshot (GET /v1/sessions/{sid}): snake_case `task_summary` counts and the Agent Runtime
 * snapshot fields (schemaVersion, sessionId, threads, taskSummary, tasks, blockedTasks, deliveryState). This
 * runtime has no threads: `threads` is empty.
 */
export interface SessionSnapshot {
  session_id: string;
  created_at: string;
  task_summary: {
    active: number;
    terminal: number;
    failed: number;
    lost: number;
    waiting: number;
    blocked: number;
    stale: number;
    /** Open actions across the active tasks: people the session waits for. */
    open_actions: number;
    recent_terminal: ListedTask[];
  };
  schemaVersion: string;
  sessionId: string;
  updatedAt: string;
  threads: never[];
  taskSummary: {
    activeCount: number;
    terminalCount: number;
    failedCount: number;
    lostCount: number;
    waitingCount: number;
    blockedCount: number;
    staleCount: number;
    recentTerminal: CompactTask[];
  };
  tasks: CompactTask[];
  /** Tasks held up: blocked, with blocked or failed steps, or waiting on people (`actionIds`: the open actions to answer). */
  blockedTasks: { taskId: string; nativeStatus: TaskStatus; blockedSteps: number; failedSteps: number; requiredAction: string; actionIds: string[] }[];
  deliveryState: { status: string };
  /** How each bounded list pages on: `tasks`, `blockedTasks` and the recent terminal tasks. */
  pages: { tasks: SnapshotListPage; blockedTasks: SnapshotListPage; recentTerminal: SnapshotListPage };
}

/** One bounded list of the session snapshot: `listed` of `total`, and `next` the request for the rest (null: none). */
export interface SnapshotListPage {
  listed: number;
  total: number;
  next: string | null;
}

/** A page of one task's human actions (GET .../tasks/{tid}/actions), oldest first. */
export interface ActionPage {
  readonly actions: Action[];
  readonly total: number;
  readonly limit: number;
  readonly offset: number;
  readonly next_offset: number | null;
}

/** An open action in the session's inbox, with the title of its task. */
export type InboxAction = Action & { readonly task_title: string };

/** A page of the session's inbox of open actions (GET /v1/sessions/{sid}/actions), newest first. */
export interface SessionActionPage {
  readonly actions: InboxAction[];
  readonly total: number;
  readonly limit: number;
  readonly offset: number;
  readonly next_offset: number | null;
}

/** A live token of a session as GET /v1/sessions/{sid}/tokens lists it: never the token itself. */
export interface ListedToken {
  readonly token_id: string;
  readonly role: "orchestrator" | "worker" | "observer" | "approver" | "a2a_client";
  readonly agent_id: string;
  /** The run it acts for: an orchestrator's or a worker's; null for the others. */
  readonly run_id: string | null;
  /** A worker token's task; null for the others. */
  readonly task_id: string | null;
  readonly expires_at: string;
}

/** GET /v1/sessions/{sid}/tokens: live tokens, oldest first. */
export interface TokenListPage {
  readonly tokens: ListedToken[];
  /** The `cursor` of the next page; null on the last. */
  readonly next_cursor: string | null;
}
