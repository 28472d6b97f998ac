/**
 * @module RuntimeCalls: the operations of a RuntimeClient, one typed method per operation of routes/http/catalog.ts,
 * plus the event streams. RuntimeClient (runtime-client.ts) extends it with what makes other clients
 * (`withToken`, `worker`, `dispatchWorker`), beside the WorkerClient it makes: those two classes name each
 * other, so they share a module, and the operations live here. The file runs over 400 lines: one short method per
 * operation, kept in one class so that the SDK's whole surface reads in one place.
 */
import { MAX_WAL_PAGE_LIMIT } from "../contract/limits.js";
import type { RuntimeEvent, WalEvent } from "../core/browser.js";
import { MAX_ACTION_WAIT_MS, pollUntilResolved, type WaitForActionOptions } from "./action-wait.js";
import { isRuntimeApiError } from "./errors.js";
import { EventSubscription, frameJson, type SubscribeOptions } from "./event-stream.js";
import { seg, sessionPath, taskPath } from "./paths.js";
import { retryAfterDelay, sleep } from "./retry.js";
import { joinTaskPages } from "./task-pages.js";
import { type ApiRequest, Transport, type TransportOptions } from "./transport.js";
import type {
  Action,
  ActionAnswer,
  ActionInbox,
  ActionListQuery,
  ActionPage,
  CallOptions,
  CancelRunInput,
  ClaimNextAnswer,
  ClaimStepAnswer,
  LinkTasksRequest,
  TaskGraphPage,
  TaskGraphQuery,
  TaskLink,
  CreateSessionInput,
  CreateScheduleInput,
  CreateTaskInput,
  FinishRunInput,
  GetActionQuery,
  MintTokenInput,
  PatchOpInput,
  ProgressInput,
  PromptSummary,
  ReasonInput,
  RequestActionInput,
  RespondActionInput,
  SessionCreated,
  SessionSnapshot,
  SessionSnapshotQuery,
  SessionEvent,
  SetPeerCredentialInput,
  PeerList,
  Schedule,
  ScheduleEvent,
  ScheduleList,
  TriggerAnswer,
  StepPage,
  StepQuery,
  StreamEnd,
  SummaryQuery,
  TaskListPage,
  TaskGetQuery,
  TaskListQuery,
  TaskRef,
  TaskTemplate,
  TaskView,
  TokenMinted,
  TokenListPage,
  TokenListQuery,
  ToolList,
  CreatedWebhook,
  CreateWebhookInput,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryPage,
  WebhookDeliveryQuery,
  WebhookList,
  UpdateStepAnswer,
  UpdateStepInput,
  StepWriteAnswer,
  WalPage,
  WalQuery,
  WriteAnswer,
} from "./types.js";
import { followWalPages, parseWalPage } from "./wal-page.js";

/** Marks a write whose answer type leaves the task summary optional (StepWriteAnswer). */
const LEAN = true;

/** How to build a RuntimeClient: where the runtime is, the caller's token, fetch, retries and batching. */
export interface RuntimeClientOptions extends TransportOptions {
  /** The bearer token of every call (admin, orchestrator, worker, observer or approver). */
  readonly token?: string;
}

/** The operations of the agent task runtime's HTTP API, as RuntimeClient has them (construct a RuntimeClient). */
export class RuntimeCalls {
  readonly transport: Transport;
  readonly token: string | undefined;

  constructor(options: RuntimeClientOptions | { readonly transport: Transport; readonly token?: string }) {
    this.transport = "transport" in options ? options.transport : new Transport(options);
    this.token = options.token;
  }

  /** Closes the command sockets of this client's family (see the `socket` option); other calls still work. */
  close(): void {
    this.transport.close();
  }

  // ---- sessions -----------------------------------------------------------------------------------

  /** POST /v1/sessions (admin): a session with orchestrator and observer tokens. */
  createSession(body: CreateSessionInput = {}, opts?: CallOptions): Promise<SessionCreated> {
    return this.write("POST", "/v1/sessions", body, opts);
  }

  /** POST /v1/sessions/{sid}/tokens (admin, orchestrator): an orchestrator, observer or approver token. */
  mintToken(sessionId: string, body: MintTokenInput, opts?: CallOptions): Promise<TokenMinted> {
    return this.write("POST", `${sessionPath(sessionId)}/tokens`, body, opts);
  }

  /** POST /v1/sessions/{sid}/tokens `{role: "approver"}`: a token that reads the session and answers its actions. */
  mintApproverToken(sessionId: string, body: Omit<MintTokenInput, "role"> = {}, opts?: CallOptions): Promise<TokenMinted> {
    return this.mintToken(sessionId, { ...body, role: "approver" }, opts);
  }

  /** GET /v1/sessions/{sid}/tokens (admin, orchestrator): a page of the session's live tokens, never the tokens themselves. */
  listTokens(sessionId: string, query: TokenListQuery = {}, opts?: CallOptions): Promise<TokenListPage> {
    return this.read(`${sessionPath(sessionId)}/tokens`, { ...query }, opts);
  }

  /** DELETE /v1/sessions/{sid}/tokens/{token_id} (admin, orchestrator): every surface then answers it 401 `revoked`. */
  revokeToken(sessionId: string, tokenId: string, opts?: CallOptions): Promise<{ token_id: string; revoked_at: string }> {
    return this.write("DELETE", `${sessionPath(sessionId)}/tokens/${seg(tokenId)}`, {}, opts);
  }

  /** POST /v1/sessions/{sid}/tokens/revoke-all (admin, orchestrator): every token revoked, this client's too; a fresh orchestrator token. */
  revokeAllTokens(sessionId: string, opts?: CallOptions): Promise<TokenMinted> {
    return this.write("POST", `${sessionPath(sessionId)}/tokens/revoke-all`, {}, opts);
  }

  /** GET /v1/sessions/{sid}/actions: the session's inbox of open actions, newest first, each with its task's title. */
  sessionActions(sessionId: string, query: ActionListQuery = {}, opts?: CallOptions): Promise<ActionInbox> {
    return this.read(`${sessionPath(sessionId)}/actions`, { ...query }, opts);
  }

  /** POST /v1/sessions/{sid}/peers (orchestrator): the Authorization value delegated steps send to one A2A peer origin. */
  setPeerCredential(sessionId: string, body: SetPeerCredentialInput, opts?: CallOptions): Promise<{ origin: string }> {
    return this.write("POST", `${sessionPath(sessionId)}/peers`, body, opts);
  }

  /** GET /v1/sessions/{sid}/peers (orchestrator): the peer origins the session holds a credential for. */
  listPeers(sessionId: string, opts?: CallOptions): Promise<PeerList> {
    return this.read(`${sessionPath(sessionId)}/peers`, undefined, opts);
  }

  /** DELETE /v1/sessions/{sid}/peers/{origin} (orchestrator): forgets the credential of one A2A peer origin (404 when none). */
  deletePeerCredential(sessionId: string, origin: string, opts?: CallOptions): Promise<{ origin: string }> {
    return this.write("DELETE", `${sessionPath(sessionId)}/peers/${seg(origin)}`, {}, opts);
  }

  /** POST /v1/sessions/{sid}/links (link_tasks, orchestrator): the new link, or the same live link again. */
  linkTasks(sessionId: string, body: LinkTasksRequest, opts?: CallOptions): Promise<{ link: TaskLink }> {
    return this.write("POST", `${sessionPath(sessionId)}/links`, body, opts);
  }

  /** DELETE /v1/sessions/{sid}/links/{link_id} (unlink_tasks, orchestrator): the link, now removed. */
  unlinkTasks(sessionId: string, linkId: string, opts?: CallOptions): Promise<{ link: TaskLink }> {
    return this.write("DELETE", `${sessionPath(sessionId)}/links/${seg(linkId)}`, {}, opts);
  }

  /** GET /v1/sessions/{sid}/graph: a page of the session's task graph (nodes by task_id, edges from them). */
  taskGraph(sessionId: string, query: TaskGraphQuery = {}, opts?: CallOptions): Promise<TaskGraphPage> {
    return this.read(`${sessionPath(sessionId)}/graph`, { ...query }, opts);
  }

  // ---- webhooks (docs/api.md "Delivery and notifications"; orchestrator) ----------------------------

  /** POST /v1/sessions/{sid}/webhooks (create_webhook): `{webhook_id, secret, webhook}`; the `whsec_` secret is answered this once. */
  createWebhook(sessionId: string, body: CreateWebhookInput, opts?: CallOptions): Promise<CreatedWebhook> {
    return this.write("POST", `${sessionPath(sessionId)}/webhooks`, body, opts);
  }

  /** GET /v1/sessions/{sid}/webhooks (list_webhooks): the subscriptions, oldest first, never a secret. */
  listWebhooks(sessionId: string, opts?: CallOptions): Promise<WebhookList> {
    return this.read(`${sessionPath(sessionId)}/webhooks`, undefined, opts);
  }

  /** GET .../webhooks/{webhook_id} (get_webhook): one subscription, `status` active or disabled. */
  getWebhook(sessionId: string, webhookId: string, opts?: CallOptions): Promise<Webhook> {
    return this.read(`${sessionPath(sessionId)}/webhooks/${seg(webhookId)}`, undefined, opts);
  }

  /** DELETE .../webhooks/{webhook_id} (delete_webhook): nothing more is sent to it. */
  deleteWebhook(sessionId: string, webhookId: string, opts?: CallOptions): Promise<{ webhook_id: string }> {
    return this.write("DELETE", `${sessionPath(sessionId)}/webhooks/${seg(webhookId)}`, {}, opts);
  }

  /** GET .../webhooks/{webhook_id}/deliveries (list_webhook_deliveries): a page, newest first; pass `next_cursor` as `after`. */
  listWebhookDeliveries(sessionId: string, webhookId: string, query: WebhookDeliveryQuery = {}, opts?: CallOptions): Promise<WebhookDeliveryPage> {
    return this.read(`${sessionPath(sessionId)}/webhooks/${seg(webhookId)}/deliveries`, { ...query }, opts);
  }

  /** POST .../deliveries/{delivery_id}/retry (retry_webhook_delivery): a failed delivery is sent again, its tries counted afresh. */
  retryWebhookDelivery(sessionId: string, webhookId: string, deliveryId: string, opts?: CallOptions): Promise<{ delivery: WebhookDelivery }> {
    return this.write("POST", `${sessionPath(sessionId)}/webhooks/${seg(webhookId)}/deliveries/${seg(deliveryId)}/retry`, {}, opts);
  }

  // ---- schedules ----------------------------------------------------------------------------------

  /** POST /v1/sessions/{sid}/schedules (agent.schedule_create, orchestrator): a durable schedule; one task per occurrence. */
  createSchedule(sessionId: string, body: CreateScheduleInput, opts?: CallOptions): Promise<Schedule> {
    return this.write("POST", `${sessionPath(sessionId)}/schedules`, body, opts);
  }

  /** GET /v1/sessions/{sid}/schedules (agent.schedule_list): the session's schedules, oldest first. */
  listSchedules(sessionId: string, opts?: CallOptions): Promise<ScheduleList> {
    return this.read(`${sessionPath(sessionId)}/schedules`, undefined, opts);
  }

  /** GET .../schedules/{schedule_id} (agent.schedule_get): with next_run_at, recent_runs and missed. */
  getSchedule(sessionId: string, scheduleId: string, opts?: CallOptions): Promise<Schedule> {
    return this.read(`${sessionPath(sessionId)}/schedules/${seg(scheduleId)}`, undefined, opts);
  }

  /** POST .../schedules/{schedule_id}/pause (agent.schedule_pause): nothing falls, nothing is missed, until resumed. */
  pauseSchedule(sessionId: string, scheduleId: string, opts?: CallOptions): Promise<Schedule> {
    return this.write("POST", `${sessionPath(sessionId)}/schedules/${seg(scheduleId)}/pause`, {}, opts);
  }

  /** POST .../schedules/{schedule_id}/resume (agent.schedule_resume): from now on. */
  resumeSchedule(sessionId: string, scheduleId: string, opts?: CallOptions): Promise<Schedule> {
    return this.write("POST", `${sessionPath(sessionId)}/schedules/${seg(scheduleId)}/resume`, {}, opts);
  }

  /** POST .../schedules/{schedule_id}/trigger (agent.schedule_trigger): one occurrence now (the overlap policy applies). */
  triggerSchedule(sessionId: string, scheduleId: string, opts?: CallOptions): Promise<TriggerAnswer> {
    return this.write("POST", `${sessionPath(sessionId)}/schedules/${seg(scheduleId)}/trigger`, {}, opts);
  }

  /** DELETE .../schedules/{schedule_id} (agent.schedule_delete): stops and removes it; its tasks are left alone. */
  deleteSchedule(sessionId: string, scheduleId: string, opts?: CallOptions): Promise<Schedule> {
    return this.write("DELETE", `${sessionPath(sessionId)}/schedules/${seg(scheduleId)}`, {}, opts);
  }

  /** GET /v1/sessions/{sid}: the session snapshot (`blocked_after`: the next page of its held-up tasks). */
  getSession(sessionId: string, query: SessionSnapshotQuery = {}, opts?: CallOptions): Promise<SessionSnapshot> {
    return this.read(sessionPath(sessionId), { ...query }, opts);
  }

  /** GET /v1/sessions/{sid}/tasks (agent.task_list). */
  listTasks(sessionId: string, query: TaskListQuery = {}, opts?: CallOptions): Promise<TaskListPage> {
    return this.read(`${sessionPath(sessionId)}/tasks`, { ...query }, opts);
  }

  // ---- tasks --------------------------------------------------------------------------------------

  /** POST /v1/sessions/{sid}/tasks (agent.task_create): the whole DAG. */
  createTask(sessionId: string, body: CreateTaskInput, opts?: CallOptions): Promise<WriteAnswer> {
    return this.write("POST", `${sessionPath(sessionId)}/tasks`, body, opts);
  }

  /**
   * GET .../tasks/{tid} (agent.task_get): the DAG, attempts, runs, progress, diagnostics, snapshot. A task of more
   * than 1,000 steps, runs or attempts, or a call with `limit` or `cursor`, is answered one page at a time, with
   * `page.next_cursor`: `taskPages` and `getWholeTask` follow them.
   */
  getTask(task: TaskRef, opts?: CallOptions & TaskGetQuery): Promise<TaskView> {
    const { limit, cursor, ...call } = opts ?? {};
    return this.read(taskPath(task), limit === undefined && cursor === undefined ? undefined : { limit, cursor }, call);
  }

  /**
   * Every page of GET .../tasks/{tid}, first to last (one for a task that fits one answer). A page refused with
   * rate_limited (the task is busy with large reads) is asked again after its Retry-After, until `signal` aborts.
   */
  async *taskPages(task: TaskRef, opts: CallOptions & Pick<TaskGetQuery, "limit"> = {}): AsyncGenerator<TaskView, void, undefined> {
    let cursor: string | undefined;
    for (;;) {
      let view: TaskView;
      try {
        view = await this.getTask(task, { ...opts, ...(cursor === undefined ? {} : { cursor }) });
      } catch (e) {
        if (!isRuntimeApiError(e, "rate_limited")) throw e;
        await sleep(retryAfterDelay(e.retryAfterMs ?? 1_000), opts.signal);
        continue;
      }
      yield view;
      const next = view.page?.next_cursor ?? null;
      if (next === null) return;
      cursor = next;
    }
  }

  /** The whole task, its pages joined (`joinTaskPages`): the answer a task that fits one page gets, without `page`. */
  async getWholeTask(task: TaskRef, opts: CallOptions & Pick<TaskGetQuery, "limit"> = {}): Promise<TaskView> {
    const pages: TaskView[] = [];
    for await (const view of this.taskPages(task, opts)) pages.push(view);
    return pages.length === 1 && pages[0]!.page === undefined ? pages[0]! : joinTaskPages(pages);
  }

  /** PATCH .../tasks/{tid} (agent.task_update): patch operations, in order, atomically. */
  updateTask(task: TaskRef, ops: readonly PatchOpInput[], opts?: CallOptions): Promise<WriteAnswer> {
    return this.write("PATCH", taskPath(task), { ops }, opts);
  }

  /** POST .../complete (agent.task_complete). */
  completeTask(task: TaskRef, body: ReasonInput = {}, opts?: CallOptions): Promise<WriteAnswer> {
    return this.write("POST", `${taskPath(task)}/complete`, body, opts);
  }

  /** POST .../fail (agent.task_fail). */
  failTask(task: TaskRef, body: ReasonInput = {}, opts?: CallOptions): Promise<WriteAnswer> {
    return this.write("POST", `${taskPath(task)}/fail`, body, opts);
  }

  /** POST .../cancel (agent.task_cancel). */
  cancelTask(task: TaskRef, body: ReasonInput = {}, opts?: CallOptions): Promise<WriteAnswer> {
    return this.write("POST", `${taskPath(task)}/cancel`, body, opts);
  }

  /** POST .../block: no dispatch or claim until reopened. */
  blockTask(task: TaskRef, body: ReasonInput = {}, opts?: CallOptions): Promise<WriteAnswer> {
    return this.write("POST", `${taskPath(task)}/block`, body, opts);
  }

  /** POST .../reopen: a blocked task back to pending. */
  reopenTask(task: TaskRef, body: ReasonInput = {}, opts?: CallOptions): Promise<WriteAnswer> {
    return this.write("POST", `${taskPath(task)}/reopen`, body, opts);
  }

  /** POST .../pause (orchestrator): no dispatch and no claim until resumed; held steps go on. */
  pauseTask(task: TaskRef, body: ReasonInput = {}, opts?: CallOptions): Promise<WriteAnswer> {
    return this.write("POST", `${taskPath(task)}/pause`, body, opts);
  }

  /** POST .../resume (orchestrator): a paused task back to pending, its ready steps claimable again. */
  resumeTask(task: TaskRef, body: ReasonInput = {}, opts?: CallOptions): Promise<WriteAnswer> {
    return this.write("POST", `${taskPath(task)}/resume`, body, opts);
  }

  /** POST .../archive (orchestrator): a terminal task leaves the task list (listTasks with include_archived shows it). */
  archiveTask(task: TaskRef, body: ReasonInput = {}, opts?: CallOptions): Promise<WriteAnswer> {
    return this.write("POST", `${taskPath(task)}/archive`, body, opts);
  }

  // ---- humans in the loop -------------------------------------------------------------------------

  /** POST .../actions (orchestrator): a task-level action, e.g. approve the plan before dispatch. */
  requestTaskAction(task: TaskRef, body: RequestActionInput, opts?: CallOptions): Promise<ActionAnswer> {
    return this.write("POST", `${taskPath(task)}/actions`, body, opts);
  }

  /** POST .../steps/{step}/actions (the step's holder, or the orchestrator): the step waits, its lease held, until a person answers. */
  requestStepAction(task: TaskRef, stepId: string, body: RequestActionInput, opts?: CallOptions): Promise<ActionAnswer> {
    return this.write("POST", `${taskPath(task)}/steps/${seg(stepId)}/actions`, body, opts);
  }

  /** GET .../actions: the task's actions, oldest first, optionally only the open or the resolved ones. */
  listActions(task: TaskRef, query: ActionListQuery = {}, opts?: CallOptions): Promise<ActionPage> {
    return this.read(`${taskPath(task)}/actions`, { ...query }, opts);
  }

  /** GET .../actions/{action_id}: the action; with `waitMs` (≤ 30,000) the answer waits until it is resolved or the wait ends. */
  async getAction(task: TaskRef, actionId: string, opts: CallOptions & GetActionQuery = {}): Promise<Action> {
    const { waitMs, ...call } = opts;
    const query = waitMs === undefined ? undefined : { wait_ms: Math.max(0, Math.min(MAX_ACTION_WAIT_MS, Math.floor(waitMs))) };
    const answer = await this.read<{ action: Action }>(`${taskPath(task)}/actions/${seg(actionId)}`, query, call);
    return answer.action;
  }

  /** The action once it is resolved: long-polls of up to 30 s, polled through dropped connections (see action-wait.ts). */
  waitForAction(task: TaskRef, actionId: string, opts: WaitForActionOptions = {}): Promise<Action> {
    const path = taskPath(task);
    return pollUntilResolved((waitMs, signal) => this.getAction(path, actionId, { waitMs, ...(signal === undefined ? {} : { signal }) }), this.transport.retry, opts);
  }

  /** POST .../actions/{action_id}/respond (orchestrator, approver): approved, rejected or submitted (with `input`). */
  respondAction(task: TaskRef, actionId: string, body: RespondActionInput, opts?: CallOptions): Promise<ActionAnswer> {
    return this.write("POST", `${taskPath(task)}/actions/${seg(actionId)}/respond`, body, opts);
  }

  /** POST .../runs/{run}/finish: end a run (a step it still holds fails with the run-end fallback reason, e.g. worker_finished_without_terminal_step_status). */
  finishRun(task: TaskRef, runId: string, body: FinishRunInput, opts?: CallOptions): Promise<WriteAnswer> {
    return this.write("POST", `${taskPath(task)}/runs/${seg(runId)}/finish`, body, opts);
  }

  /** POST .../runs/{run}/cancel (orchestrator): its held step fails with worker_cancelled. */
  cancelRun(task: TaskRef, runId: string, body: CancelRunInput = {}, opts?: CallOptions): Promise<WriteAnswer> {
    return this.write("POST", `${taskPath(task)}/runs/${seg(runId)}/cancel`, body, opts);
  }

  /** GET .../steps (agent.task_query_steps). */
  querySteps(task: TaskRef, query: StepQuery = {}, opts?: CallOptions): Promise<StepPage> {
    const { status, ...rest } = query;
    return this.read(`${taskPath(task)}/steps`, { ...rest, status: status === undefined ? undefined : typeof status === "string" ? [status] : status }, opts);
  }

  /** POST .../steps/{step}/claim (agent.task_claim_step): the step under a lease. */
  claimStep(task: TaskRef, stepId: string, opts?: CallOptions): Promise<ClaimStepAnswer> {
    return this.write("POST", `${taskPath(task)}/steps/${seg(stepId)}/claim`, {}, opts, LEAN);
  }

  /** POST .../steps/claim-next: the first claimable step in scope, or `{no_step_claimed: true}`. */
  claimNext(task: TaskRef, opts?: CallOptions): Promise<ClaimNextAnswer> {
    return this.write("POST", `${taskPath(task)}/steps/claim-next`, {}, opts, LEAN);
  }

  /** POST .../steps/{step}/status (agent.task_update_step); `claim_next: true` takes the next step in the same call. */
  updateStep(task: TaskRef, stepId: string, body: UpdateStepInput, opts?: CallOptions): Promise<UpdateStepAnswer> {
    return this.write("POST", `${taskPath(task)}/steps/${seg(stepId)}/status`, body, opts, LEAN);
  }

  /** POST .../steps/{step}/progress (agent.task_progress): renews the caller's lease. */
  appendProgress(task: TaskRef, stepId: string, body: ProgressInput = {}, opts?: CallOptions): Promise<StepWriteAnswer> {
    return this.write("POST", `${taskPath(task)}/steps/${seg(stepId)}/progress`, body, opts, LEAN);
  }

  /** GET .../summary: the compact DAG summary for a prompt. */
  summary(task: TaskRef, query: SummaryQuery = {}, opts?: CallOptions): Promise<PromptSummary> {
    return this.read(`${taskPath(task)}/summary`, { ...query }, opts);
  }

  /** GET .../wal: the WAL as JSON Lines, parsed and validated (`parseWalJsonl`), after `after_seq`. */
  async walExport(task: TaskRef, query: WalQuery = {}, opts?: CallOptions): Promise<WalPage> {
    const { text, headers } = await this.transport.text(this.request("GET", `${taskPath(task)}/wal`, { query: { ...query }, opts }));
    const events = parseWalPage(text, query.after_seq ?? 0);
    const header = Number(headers.get("x-last-wal-seq"));
    return { events, text, last_wal_seq: Number.isInteger(header) && headers.has("x-last-wal-seq") ? header : (events.at(-1)?.wal_seq ?? query.after_seq ?? 0) };
  }

  /**
   * Every WAL event after `after_seq` (default 0), in order, up to the task's last wal_seq when the first page
   * is answered: pages of `page_size` events (default MAX_WAL_PAGE_LIMIT, 10,000) followed by after_seq, each
   * validated by `walExport` and retried by the transport. Memory holds one page; events written meanwhile are
   * left to a later call (from the last wal_seq this one gave).
   */
  walEvents(task: TaskRef, query: { readonly after_seq?: number; readonly page_size?: number } = {}, opts?: CallOptions): AsyncGenerator<WalEvent, void, undefined> {
    return followWalPages((after_seq, limit) => this.walExport(task, { after_seq, limit }, opts), query.after_seq ?? 0, query.page_size ?? MAX_WAL_PAGE_LIMIT);
  }

  /** GET /v1/task-template (agent.task_template). */
  taskTemplate(opts?: CallOptions): Promise<TaskTemplate> {
    return this.read("/v1/task-template", undefined, opts);
  }

  /** GET /v1/tools: JSON Schemas of the tools the caller's role may use. */
  tools(opts?: CallOptions): Promise<ToolList> {
    return this.read("/v1/tools", undefined, opts);
  }

  // ---- event streams ------------------------------------------------------------------------------

  /**
   * GET .../tasks/{tid}/events: the task's runtime events, in order, each once, reconnecting with
   * Last-Event-ID when the connection drops; the iteration ends when the task is terminal (`end`).
   */
  subscribe(task: TaskRef, opts: SubscribeOptions = {}): EventSubscription<RuntimeEvent, StreamEnd> {
    const path = `${taskPath(task)}/events`;
    return new EventSubscription(this.openStream(path, opts), { decode: (f) => frameJson(f) as RuntimeEvent, endEvent: "end", decodeEnd: (f) => frameJson(f) as StreamEnd }, opts);
  }

  /** GET /v1/sessions/{sid}/events: a `snapshot.updated` event each time a task of the session changes; never ends by itself. */
  subscribeSession(sessionId: string, opts: SubscribeOptions = {}): EventSubscription<SessionEvent> {
    const path = `${sessionPath(sessionId)}/events`;
    return new EventSubscription(this.openStream(path, opts), { decode: (f) => frameJson(f) as SessionEvent, endEvent: null, decodeEnd: () => undefined as never }, opts);
  }

  /** GET .../schedules/{schedule_id}/events: the schedule's job.* events; the iteration ends when the schedule is deleted. */
  subscribeSchedule(sessionId: string, scheduleId: string, opts: SubscribeOptions = {}): EventSubscription<ScheduleEvent, { reason: "schedule_deleted" }> {
    const path = `${sessionPath(sessionId)}/schedules/${seg(scheduleId)}/events`;
    return new EventSubscription(this.openStream(path, opts), { decode: (f) => frameJson(f) as ScheduleEvent, endEvent: "end", decodeEnd: (f) => frameJson(f) as { reason: "schedule_deleted" } }, opts);
  }

  private openStream(path: string, opts: SubscribeOptions) {
    return (lastEventId: string | undefined, signal: AbortSignal) =>
      this.transport.open({
        method: "GET",
        path,
        token: this.token,
        signal,
        headers: { accept: "text/event-stream", ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }) },
        ...(lastEventId === undefined && opts.afterSeq !== undefined ? { query: { after_seq: opts.afterSeq } } : {}),
      });
  }

  // ---- plumbing -----------------------------------------------------------------------------------

  private request(method: ApiRequest["method"], path: string, parts: { body?: object; query?: ApiRequest["query"]; opts?: CallOptions | undefined }): ApiRequest {
    const o = parts.opts;
    return {
      method,
      path,
      token: this.token,
      ...(parts.body === undefined ? {} : { body: parts.body }),
      ...(parts.query === undefined ? {} : { query: parts.query }),
      ...(o?.signal === undefined ? {} : { signal: o.signal }),
      ...(o?.idempotencyKey === undefined ? {} : { idempotencyKey: o.idempotencyKey }),
    };
  }

  private read<T>(path: string, query: ApiRequest["query"], opts: CallOptions | undefined): Promise<T> {
    return this.transport.json<T>(this.request("GET", path, { query, opts }));
  }

  /** A write; `lean` when its answer type does not promise the task summary (a socket frame may leave it out). */
  protected write<T>(method: "POST" | "PATCH" | "DELETE", path: string, body: object, opts: CallOptions | undefined, lean = false): Promise<T> {
    return this.transport.json<T>({ ...this.request(method, path, { body, opts }), ...(lean ? { lean } : {}) });
  }
}
