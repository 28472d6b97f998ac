/**
 * @module The A2A request handler (the SDK's `A2ARequestHandler`): every A2A method as calls on the task and
 * session objects, as the caller's a2a_client actor, so the core's rules decide what it may see and do (it
 * reaches only the tasks it submitted). Nothing is kept in memory between requests: the WAL is the truth.
 */
import {
  type AgentCard,
  type CancelTaskRequest,
  type GetTaskRequest,
  type ListTasksRequest,
  type ListTasksResponse,
  type Message,
  type SendMessageRequest,
  type StreamResponse,
  type SubscribeToTaskRequest,
  type Task,
  type TaskPushNotificationConfig,
  type GetTaskPushNotificationConfigRequest,
  type ListTaskPushNotificationConfigsRequest,
  type ListTaskPushNotificationConfigsResponse,
  type DeleteTaskPushNotificationConfigRequest,
  TaskState,
} from "@a2a-js/sdk";
import { A2AError, TaskNotCancelableError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import type { A2ARequestHandler, ServerCallContext } from "@a2a-js/sdk/server";
import { type Action, type Actor, ID_PATTERN, projectEvent, type RuntimeEvent, runtimeSequence, SEQUENCE_STRIDE, sequencePosition, type WalEvent } from "../../src/core/index.js";
import { type Env, readConfig, taskObjectName } from "../../durable-objects/shared/env.js";
import { reportIncident } from "../../durable-objects/shared/incident.js";
import { SseParser } from "../../src/lib/sse-parser.js";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import type { SubmittedTaskPage } from "../../durable-objects/session/session-rpc.js";
import { a2aErrorOf, invalidParams, RuntimeFault, taskNotFound } from "./a2a-errors.js";
import { actionIdRequired, actionNotOpen, answerIdempotencyOf, LISTED_OPEN_ACTIONS, messageIdReused, messageKeyOf, namedActionIdOf } from "./a2a-answers.js";
import type { ActionPage } from "../../src/contract/index.js";
import type { Idempotency } from "../../durable-objects/task/storage/idempotency-store.js";
import { a2aStateOf, a2aTaskOf, listFilterOf, responseOf, submissionOf, type TaskViewJson } from "./a2a-map.js";
import { isTerminalA2a } from "../../durable-objects/peers/a2a-status.js";
import { PushConfigs, pushConfigProblem, SENT_PUSH_CONFIG, sentPushConfigIdOf } from "./a2a-push-configs.js";
import { a2aStreamStateOf, a2aUpdatesOf } from "./a2a-stream-map.js";
import { requestHash, sha256DerivedId } from "../../src/lib/hash.js";

/** Pause between two reads of a blocking SendMessage's task. */
const SEND_POLL_MS = 200;

/** WAL events per read, and the pause before reading again, of a stream whose task event stream is full. */
const WAL_PAGE = 100;
const WAL_POLL_MS = 500;

/**
 * The task id, thread id and create Idempotency-Key a new message's task gets, all derived from the caller's agent
 * and the message's messageId: a client retrying a send (same messageId) reaches the same task and gets it back,
 * never a second one. The key is scoped to the caller by the task object, as REST keys are.
 */
async function createIdentityOf(agentId: string, messageId: string): Promise<{ taskId: string; threadId: string; key: string }> {
  const digest = await sha256DerivedId("A2A", "create", JSON.stringify([agentId, messageId]));
  return { taskId: `a2a-${digest.slice(0, 26)}`, threadId: `ctx-${digest.slice(26, 52)}`, key: await messageKeyOf(messageId) };
}

/** Runs a handler method: an exception that is not an A2A error becomes -32603 with an incident id, never its JS message. */
async function guarded<T>(where: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof A2AError || e instanceof RuntimeFault) throw e;
    throw new Error(reportIncident(e, where).message);
  }
}

/**
 * The runtime events of a task event stream, in order, and "end" for its end frame; the stream closes when the
 * task ends or its lifetime (SSE_MAX_STREAM_MS) is over. Cancelled when the caller stops reading.
 */
async function* runtimeEventsOf(stream: ReadableStream<Uint8Array>, gone: AbortSignal | undefined): AsyncGenerator<RuntimeEvent | "end", void, undefined> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SseParser();
  // The client went away: the pending read ends at once (else the slot is held until the task's next event).
  const stop = () => void reader.cancel().catch(() => undefined);
  gone?.addEventListener("abort", stop);
  try {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) return;
      for (const frame of parser.push(chunk.value)) yield frame.event === "end" ? "end" : (JSON.parse(frame.data) as RuntimeEvent);
    }
  } finally {
    gone?.removeEventListener("abort", stop);
    await reader.cancel().catch(() => undefined);
  }
}

/** The signal a route aborts when the client of a stream goes away (ServerCallContext state `STREAM_GONE`), if any. */
export const STREAM_GONE = "stream_gone";
function goneSignalOf(ctx: ServerCallContext): AbortSignal | undefined {
  const value = ctx.state?.get(STREAM_GONE);
  return value instanceof AbortSignal ? value : undefined;
}

/** Text of an RPC answer that may be JSON text or a stream of it (a large page). */
async function textOf(value: string | ReadableStream<Uint8Array>): Promise<string> {
  return typeof value === "string" ? value : new Response(value).text();
}

/** Our `A2ARequestHandler`: one per request, for the caller's actor. */
export class RuntimeA2AHandler implements A2ARequestHandler {
  private readonly pushConfigs: PushConfigs;

  constructor(
    private readonly env: Env,
    private readonly card: AgentCard,
    private readonly actor: Actor,
    /** The identity of the caller's token (tokens.ts `tokenIdentity`): the task objects count its share of their slots by it. */
    private readonly holder: string,
  ) {
    this.pushConfigs = new PushConfigs(env, actor.session_id, (taskId) => this.view(taskId));
  }

  private stub(taskId: string) {
    return this.env.TASK_GRAPHS.get(this.env.TASK_GRAPHS.idFromName(taskObjectName(this.actor.session_id, taskId)));
  }

  /** The task's view as the caller may see it; -32001 when it cannot. */
  async view(taskId: string): Promise<TaskViewJson> {
    if (!ID_PATTERN.test(taskId)) throw taskNotFound(taskId);
    const result = (await this.stub(taskId).getTask(this.actor, {}, this.holder)) as RpcResult<string | ReadableStream<Uint8Array>>;
    if (!result.ok) throw a2aErrorOf(result.error, taskId);
    return JSON.parse(await textOf(result.value)) as TaskViewJson;
  }

  async getAgentCard(): Promise<AgentCard> {
    return this.card;
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new UnsupportedOperationError("This agent has no extended agent card.");
  }

  async sendMessage(params: SendMessageRequest, _ctx: ServerCallContext): Promise<Message | Task> {
    return guarded("a2a SendMessage", async () => {
      const taskId = await this.submit(params);
      const historyLength = params.configuration?.historyLength;
      if (params.configuration?.returnImmediately === true) return a2aTaskOf(await this.view(taskId), historyLength);
      return a2aTaskOf(await this.waitWhileSubmitted(taskId), historyLength);
    });
  }

  /**
   * Blocking SendMessage, bounded by A2A_SEND_WAIT_MS (default 10 s): for now a re-read loop on the task until
   * it leaves SUBMITTED (planned, interrupted or ended); then the task as it is.
   */
  private async waitWhileSubmitted(taskId: string): Promise<TaskViewJson> {
    const deadline = Date.now() + readConfig(this.env).a2aSendWaitMs;
    let view = await this.view(taskId);
    while (a2aStateOf(view) === TaskState.TASK_STATE_SUBMITTED && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, Math.min(SEND_POLL_MS, Math.max(0, deadline - Date.now()))));
      view = await this.view(taskId);
    }
    return view;
  }

  /**
   * Checks the message and creates the task it submits, or answers the open action of the task it names; then
   * creates the push config it asks for (checked first, so a config that cannot be taken creates no task); the task id.
   */
  private async submit(params: SendMessageRequest): Promise<string> {
    const message = params.message;
    if (message === undefined) throw invalidParams("params.message is required");
    if (message.messageId === "") throw invalidParams("message.messageId is required");
    if (message.parts.length === 0) throw invalidParams("message.parts needs at least one part");
    const push = params.configuration?.taskPushNotificationConfig;
    const problem = push === undefined ? null : pushConfigProblem(push, SENT_PUSH_CONFIG, this.pushConfigs.allowlist);
    if (problem !== null) throw invalidParams(problem);
    const taskId = message.taskId === "" ? await this.createFrom(message) : await this.continueTask(message);
    if (push !== undefined) await this.pushConfigs.create(taskId, push, await sentPushConfigIdOf(this.actor.agent_id, message.messageId), SENT_PUSH_CONFIG);
    return taskId;
  }

  /** Creates the task a message without taskId submits (or, retried, reaches it again); its id. */
  private async createFrom(message: Message): Promise<string> {
    const submission = submissionOf(message);
    if (submission === null) throw invalidParams("the message has no content");
    if (message.contextId.length > 200) throw invalidParams("message.contextId is longer than 200 characters");
    // referenceTaskIds (spec §3.4.3): tasks this work builds on, each one the client may see (else -32001).
    const references = [...new Set(message.referenceTaskIds)];
    if (references.length > 100) throw invalidParams("message.referenceTaskIds names more than 100 tasks");
    for (const ref of references) await this.view(ref);
    const identity = await createIdentityOf(this.actor.agent_id, message.messageId);
    const taskId = identity.taskId;
    const body = {
      task_id: taskId,
      wal_name: taskId,
      title: submission.title,
      summary: "",
      objective: submission.objective,
      thread_id: message.contextId === "" ? identity.threadId : message.contextId,
      ...(submission.input_refs.length === 0 ? {} : { input_refs: submission.input_refs }),
      ...(references.length === 0 ? {} : { relationships: references.map((task_id) => ({ kind: "source_task", task_id })) }),
      steps: [],
    };
    const text = JSON.stringify(body);
    const idem = { key: identity.key, hash: requestHash("POST", `a2a:SendMessage`, text) };
    const result = (await this.stub(taskId).createTask(this.actor, body, idem)) as RpcResult<unknown>;
    if (result.ok) return taskId;
    // The messageId already created this task (its key's record expired, or the first create is its twin): the same task.
    if (result.error.code === "task_id_conflict") return taskId;
    if (result.error.code === "idempotency_conflict") throw messageIdReused(message.messageId);
    throw a2aErrorOf(result.error, taskId);
  }

  /**
   * A message naming a task is no new task: it answers the open action it names in `metadata.actionId`, or, naming
   * none, the task's only open action (several open: refused, so it never answers one the client was not shown).
   * Its messageId is the answer's Idempotency-Key: a retry gets the first answer (the task back), never a second
   * answer nor a refusal because the action it answered is closed now.
   */
  private async continueTask(message: Message): Promise<string> {
    const taskId = message.taskId;
    const view = await this.view(taskId);
    const contextId = view.task.thread_id ?? "";
    if (message.contextId !== "" && message.contextId !== contextId) {
      throw invalidParams(`message.contextId does not match task ${taskId}'s context`, "CONTEXT_MISMATCH", { taskId, contextId: message.contextId.slice(0, 200) });
    }
    const named = namedActionIdOf(message);
    const idem = await answerIdempotencyOf(message, named);
    if (isTerminalA2a(a2aStateOf(view))) return this.retriedOr(message, idem, new UnsupportedOperationError({ message: `Task ${taskId} is in a terminal state`, metadata: { taskId } }));
    let action: Action;
    if (named === undefined) {
      // Counted by the object, not from the view: a view holds the first TASK_PAGE_LIMIT actions only.
      const open = (await this.stub(taskId).listActions(this.actor, { status: "open", limit: LISTED_OPEN_ACTIONS })) as RpcResult<ActionPage>;
      if (!open.ok) throw a2aErrorOf(open.error, taskId);
      if (open.value.total === 0) return this.retriedOr(message, idem, new UnsupportedOperationError({ message: `Task ${taskId} is not waiting for input`, metadata: { taskId } }));
      if (open.value.total > 1) return this.retriedOr(message, idem, actionIdRequired(taskId, open.value.actions, open.value.total));
      action = open.value.actions[0]!;
    } else {
      const found = (await this.stub(taskId).getAction(this.actor, named, 0)) as RpcResult<{ action: Action }>;
      if (!found.ok && found.error.code !== "not_found") throw a2aErrorOf(found.error, taskId);
      if (!found.ok || found.value.action.status !== "open") return this.retriedOr(message, idem, actionNotOpen(taskId, named));
      action = found.value.action;
    }
    const command = responseOf(action, message);
    if (typeof command === "string") return this.retriedOr(message, idem, invalidParams(command, undefined, { taskId, actionId: action.action_id }));
    // The task object replays the key before deciding: a twin of this message that committed meanwhile is answered as it was.
    const result = (await this.stub(taskId).execute(this.actor, command, idem)) as RpcResult<unknown>;
    if (result.ok) return taskId;
    if (result.error.code === "idempotency_conflict") throw messageIdReused(message.messageId);
    if (result.error.code === "action_resolved") throw actionNotOpen(taskId, action.action_id);
    throw a2aErrorOf(result.error, taskId);
  }

  /** The message's task when this message (its messageId) was answered before, as that answer was; else `refusal` is thrown. */
  private async retriedOr(message: Message, idem: Idempotency, refusal: Error): Promise<string> {
    const taskId = message.taskId;
    const stored = (await this.stub(taskId).storedAnswer(this.actor, "respond_action", idem)) as RpcResult<unknown> | null;
    if (stored === null) throw refusal;
    if (stored.ok) return taskId;
    if (stored.error.code === "idempotency_conflict") throw messageIdReused(message.messageId);
    throw a2aErrorOf(stored.error, taskId);
  }

  async getTask(params: GetTaskRequest): Promise<Task> {
    return guarded("a2a GetTask", async () => {
      if (params.historyLength !== undefined && params.historyLength < 0) throw invalidParams("historyLength must not be negative");
      return a2aTaskOf(await this.view(params.id), params.historyLength);
    });
  }

  async cancelTask(params: CancelTaskRequest): Promise<Task> {
    return guarded("a2a CancelTask", async () => {
      const before = await this.view(params.id);
      if (isTerminalA2a(a2aStateOf(before))) throw new TaskNotCancelableError({ message: `Task ${params.id} is already ${before.task.status}`, metadata: { taskId: params.id } });
      const result = (await this.stub(params.id).execute(this.actor, { type: "cancel_task", reason: "cancelled by the A2A client" }, null)) as RpcResult<unknown>;
      if (!result.ok) {
        // Ended between the read and the cancel: not cancelable, as it would have been a moment later.
        if (result.error.code === "task_terminal") throw new TaskNotCancelableError({ message: `Task ${params.id} has ended`, metadata: { taskId: params.id } });
        throw a2aErrorOf(result.error, params.id);
      }
      return a2aTaskOf(await this.view(params.id));
    });
  }

  async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    return guarded("a2a ListTasks", async () => {
      const pageSize = params.pageSize ?? 50;
      if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) throw invalidParams("pageSize must be between 1 and 100");
      if (params.historyLength !== undefined && params.historyLength < 0) throw invalidParams("historyLength must not be negative");
      if (params.status < 0) throw invalidParams("status is not a TaskState");
      const session = this.env.SESSIONS.get(this.env.SESSIONS.idFromName(this.actor.session_id));
      const result = (await session.listSubmittedTasks({
        client_agent_id: this.actor.agent_id,
        ...(params.contextId === "" ? {} : { context_id: params.contextId }),
        ...(params.status === TaskState.TASK_STATE_UNSPECIFIED ? {} : listFilterOf(params.status)),
        page_size: pageSize,
        ...(params.pageToken === "" ? {} : { page_token: params.pageToken }),
      })) as RpcResult<SubmittedTaskPage>;
      if (!result.ok) throw a2aErrorOf(result.error, "");
      const tasks = await Promise.all(result.value.entries.map(async (e) => a2aTaskOf(await this.view(e.task_id), params.historyLength)));
      // Spec (ListTasks): artifacts only when asked for with includeArtifacts.
      if (params.includeArtifacts !== true) for (const task of tasks) task.artifacts = [];
      return { tasks, nextPageToken: result.value.next_page_token, pageSize, totalSize: result.value.total_size };
    });
  }

  async *sendMessageStream(params: SendMessageRequest, ctx: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const taskId = await guarded("a2a SendStreamingMessage", () => this.submit(params));
    yield* this.follow(taskId, true, goneSignalOf(ctx), params.configuration?.historyLength);
  }

  async *resubscribe(params: SubscribeToTaskRequest, ctx: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    yield* this.follow(params.id, false, goneSignalOf(ctx));
  }

  /**
   * The task's stream: its Task at WAL position N first, then the updates its runtime events
   * after N mean (a2aUpdatesOf: no re-read of the task), in WAL order, so every subscriber sends the same ones;
   * closed at a terminal state (and, for SendStreamingMessage, at INPUT_REQUIRED) with that status last.
   * Subscribing to a task that has ended is -32004. Ends, reading nothing more, when `gone` is aborted.
   */
  private async *follow(taskId: string, untilInterrupted: boolean, gone: AbortSignal | undefined, historyLength?: number): AsyncGenerator<StreamResponse, void, undefined> {
    const first = await guarded("a2a stream", () => this.view(taskId));
    const task = a2aTaskOf(first, historyLength);
    const ends = (state: TaskState) => isTerminalA2a(state) || (untilInterrupted && state === TaskState.TASK_STATE_INPUT_REQUIRED);
    if (!untilInterrupted && isTerminalA2a(task.status!.state)) throw new UnsupportedOperationError({ message: `Task ${taskId} is in a terminal state`, metadata: { taskId } });
    yield { payload: { $case: "task", value: task } };
    if (ends(task.status!.state)) return;
    const mapped = a2aStreamStateOf(first, task);
    // The last runtime event mapped (every one of WAL event N: the snapshot includes them); later ones only.
    let last = runtimeSequence(first.wal_seq, SEQUENCE_STRIDE - 1);
    const stub = this.stub(taskId);
    while (gone?.aborted !== true) {
      // The task's event stream ends after SSE_MAX_STREAM_MS: it is reopened after the last runtime event mapped.
      const at = sequencePosition(last);
      const opened = (await stub.streamEvents(this.actor, { seq: at.walSeq, k: at.k === SEQUENCE_STRIDE - 1 ? null : at.k }, { token: this.holder })) as RpcResult<ReadableStream<Uint8Array>>;
      let events: AsyncIterable<RuntimeEvent | "end"> | Iterable<RuntimeEvent>;
      if (opened.ok) events = runtimeEventsOf(opened.value, gone);
      else if (opened.error.code === "rate_limited") events = await this.walPage(taskId, at.k === SEQUENCE_STRIDE - 1 ? at.walSeq : at.walSeq - 1, gone);
      else throw a2aErrorOf(opened.error, taskId);
      for await (const event of events) {
        if (event === "end") {
          // The task ended with no terminal event mapped (never expected): its status as GetTask says it.
          const now = a2aTaskOf(await guarded("a2a stream", () => this.view(taskId)));
          yield { payload: { $case: "statusUpdate", value: { taskId, contextId: now.contextId, status: now.status, metadata: undefined } } };
          return;
        }
        if (event.sequence <= last) continue;
        last = event.sequence;
        for (const update of a2aUpdatesOf(mapped, event)) yield update;
        if (ends(mapped.sent)) return;
      }
    }
  }

  /**
   * The runtime events of the next page of the task's WAL after `afterSeq`, read when its event stream already
   * has as many subscribers as it serves; after a pause when there is nothing new, so the caller tries again.
   */
  private async walPage(taskId: string, afterSeq: number, gone: AbortSignal | undefined): Promise<RuntimeEvent[]> {
    const page = (await this.stub(taskId).readWal(this.actor, afterSeq, WAL_PAGE)) as RpcResult<{ ndjson: ReadableStream<Uint8Array>; last_wal_seq: number }>;
    if (!page.ok) throw a2aErrorOf(page.error, taskId);
    const out: RuntimeEvent[] = [];
    for (const line of (await new Response(page.value.ndjson).text()).split("\n")) if (line !== "") out.push(...projectEvent(JSON.parse(line) as WalEvent));
    if (out.length === 0 && gone?.aborted !== true) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, WAL_POLL_MS);
        function done() {
          clearTimeout(timer);
          gone?.removeEventListener("abort", done);
          resolve();
        }
        gone?.addEventListener("abort", done);
      });
    }
    return out;
  }

  async createTaskPushNotificationConfig(params: TaskPushNotificationConfig): Promise<TaskPushNotificationConfig> {
    return guarded("a2a CreateTaskPushNotificationConfig", () => this.pushConfigs.createOf(params));
  }

  async getTaskPushNotificationConfig(params: GetTaskPushNotificationConfigRequest): Promise<TaskPushNotificationConfig> {
    return guarded("a2a GetTaskPushNotificationConfig", () => this.pushConfigs.get(params.taskId, params.id));
  }

  async listTaskPushNotificationConfigs(params: ListTaskPushNotificationConfigsRequest): Promise<ListTaskPushNotificationConfigsResponse> {
    return guarded("a2a ListTaskPushNotificationConfigs", () => this.pushConfigs.list(params.taskId, params.pageSize, params.pageToken));
  }

  async deleteTaskPushNotificationConfig(params: DeleteTaskPushNotificationConfigRequest): Promise<void> {
    return guarded("a2a DeleteTaskPushNotificationConfig", () => this.pushConfigs.delete(params.taskId, params.id));
  }
}
