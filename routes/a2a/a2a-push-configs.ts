/**
 * @module A2A push notification configs (A2A v1.0 §3.1.7–3.1.10, docs/protocols/a2a.md "Push notifications") as the
 * session's subscriptions of kind a2a_push: a config is checked and made a subscription of its task, receiving
 * A2A_PUSH_EVENTS, whose id is `<task id>.<config id>` (so two tasks' configs never share an id, and a client can
 * never replace another task's config); the session tells the task object at once, so its next event is pushed.
 * Reads never show a config's `token` nor its `authentication` (its credentials): the subscription does not hold
 * them apart, and they are secrets. A task the client may not see (not its own, or unknown) is TaskNotFound.
 */
import type { ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig } from "@a2a-js/sdk";
import { TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import { A2A_PUSH_EVENTS } from "../../durable-objects/peers/a2a-push.js";
import { isTerminalA2a } from "../../durable-objects/peers/a2a-status.js";
import { targetRefusal } from "../../durable-objects/peers/peer-targets.js";
import { type Env, readConfig } from "../../durable-objects/shared/env.js";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import type { NewSubscription } from "../../durable-objects/session/session-rpc.js";
import { type CreatedWebhook, MAX_WEBHOOK_URL_LENGTH, type Webhook } from "../../src/contract/index.js";
import { sha256DerivedId } from "../../src/lib/hash.js";
import { a2aErrorOf, invalidParams } from "./a2a-errors.js";
import { a2aStateOf, type TaskViewJson } from "./a2a-map.js";

/** A config id a client chooses: so that `<task id>.<config id>` fits a subscription id (128 characters). */
const CONFIG_ID = /^[A-Za-z0-9_-]{1,63}$/;
/** An HTTP authentication scheme (RFC 9110 §11.1: a token). */
const AUTH_SCHEME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
/** A header value we send: visible ASCII, inner spaces only (no control characters, so no header can be injected). */
const HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;
const MAX_TOKEN_LENGTH = 1_024;
const MAX_CREDENTIALS_LENGTH = 4_096;

/** Where a SendMessage's push config is, as its refusals name it. */
export const SENT_PUSH_CONFIG = "configuration.taskPushNotificationConfig";

/**
 * The id of the push config a SendMessage asks for without naming one: derived from the caller's agent and the
 * messageId, so a retried send replaces its config instead of adding a second one.
 */
export async function sentPushConfigIdOf(agentId: string, messageId: string): Promise<string> {
  return `msg-${(await sha256DerivedId("A2A", "push-config", JSON.stringify([agentId, messageId]))).slice(0, 32)}`;
}

/** The subscription id of a task's push config. */
export function pushWebhookId(taskId: string, configId: string): string {
  return `${taskId}.${configId}`;
}

/** Why a TaskPushNotificationConfig cannot be taken (the -32602 message), or null. `where` names it in the request. */
export function pushConfigProblem(config: TaskPushNotificationConfig, where: string, allowlist: readonly string[]): string | null {
  if (config.id !== "" && !CONFIG_ID.test(config.id)) return `${where}.id must be 1 to 63 letters, digits, '-' or '_'`;
  if (config.url === "") return `${where}.url is required`;
  if (config.url.length > MAX_WEBHOOK_URL_LENGTH) return `${where}.url is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`;
  const refused = targetRefusal(config.url, allowlist);
  if (refused !== null) return `${where}.url is refused: ${refused}`;
  if (config.token !== "" && (config.token.length > MAX_TOKEN_LENGTH || !HEADER_VALUE.test(config.token))) {
    return `${where}.token must be at most ${MAX_TOKEN_LENGTH} visible ASCII characters (it is sent as a header)`;
  }
  const auth = config.authentication;
  if (auth !== undefined) {
    if (!AUTH_SCHEME.test(auth.scheme)) return `${where}.authentication.scheme must be an HTTP authentication scheme, such as Bearer or Basic`;
    // Without credentials there is nothing to send: the receiver would wait for an Authorization that never comes.
    if (auth.credentials === "" || auth.credentials.length > MAX_CREDENTIALS_LENGTH || !HEADER_VALUE.test(auth.credentials)) {
      return `${where}.authentication.credentials must be 1 to ${MAX_CREDENTIALS_LENGTH} visible ASCII characters`;
    }
  }
  return null;
}

/** A subscription as an A2A config: its id, task and URL, never its token or credentials. */
function configOf(webhook: Webhook, taskId: string): TaskPushNotificationConfig {
  return { tenant: "", id: webhook.webhook_id.slice(taskId.length + 1), taskId, url: webhook.url, token: "", authentication: undefined };
}

/** The push configs of one session's tasks. */
export class PushConfigs {
  constructor(
    private readonly env: Env,
    private readonly sessionId: string,
    /** The task as the client may see it: TaskNotFound when it is not the client's (the handler's access check). */
    private readonly view: (taskId: string) => Promise<TaskViewJson>,
  ) {}

  private session() {
    return this.env.SESSIONS.get(this.env.SESSIONS.idFromName(this.sessionId));
  }

  /** The outbound rules a config's URL must pass (OUTBOUND_ALLOWLIST). */
  get allowlist(): readonly string[] {
    return readConfig(this.env).webhooks.allowlist;
  }

  /** CreateTaskPushNotificationConfig: a config of a live task of the client's (its id a new UUID when it names none). */
  async createOf(config: TaskPushNotificationConfig): Promise<TaskPushNotificationConfig> {
    const view = await this.view(config.taskId);
    // Nothing more would be pushed: refused, as SubscribeToTask is, rather than kept for nothing.
    if (isTerminalA2a(a2aStateOf(view))) throw new UnsupportedOperationError({ message: `Task ${config.taskId} is in a terminal state`, metadata: { taskId: config.taskId } });
    return this.create(config.taskId, config, crypto.randomUUID(), "params");
  }

  /**
   * Creates (or, with the id of one the task has, replaces) a config of task `taskId` (the caller checked it is the
   * client's), its id `id` when the config names none; -32602 for a config that cannot be taken (pushConfigProblem, or the session's refusal: its URL, the
   * session's cap of subscriptions). Answers the config as reads show it.
   */
  async create(taskId: string, config: TaskPushNotificationConfig, id: string, where: string): Promise<TaskPushNotificationConfig> {
    const problem = pushConfigProblem(config, where, this.allowlist);
    if (problem !== null) throw invalidParams(problem);
    const configId = config.id === "" ? id : config.id;
    const auth = config.authentication;
    const subscription: NewSubscription = {
      kind: "a2a_push",
      webhook_id: pushWebhookId(taskId, configId),
      task_id: taskId,
      url: config.url,
      events: A2A_PUSH_EVENTS,
      token: config.token === "" ? null : config.token,
      authorization: auth === undefined ? null : `${auth.scheme} ${auth.credentials}`,
    };
    const created = (await this.session().createWebhook(subscription)) as RpcResult<CreatedWebhook>;
    if (!created.ok) throw created.error.code === "validation_error" ? invalidParams(`${where}: ${created.error.message}`) : a2aErrorOf(created.error, taskId);
    return configOf(created.value.webhook, taskId);
  }

  /** One config of the task; TaskNotFoundError when it has none of this id (spec §3.1.8). */
  async get(taskId: string, configId: string): Promise<TaskPushNotificationConfig> {
    await this.view(taskId);
    const found = CONFIG_ID.test(configId) ? ((await this.session().getWebhook(pushWebhookId(taskId, configId))) as RpcResult<Webhook>) : null;
    if (found === null || !found.ok) {
      if (found !== null && found.error.code !== "not_found") throw a2aErrorOf(found.error, taskId);
      throw notFound(taskId, configId);
    }
    if (!isActiveConfigOf(found.value, taskId)) throw notFound(taskId, configId);
    return configOf(found.value, taskId);
  }

  /** The task's configs, oldest first, `pageSize` at a time (0: all); the token is where the next page starts. */
  async list(taskId: string, pageSize: number, pageToken: string): Promise<ListTaskPushNotificationConfigsResponse> {
    await this.view(taskId);
    if (!Number.isInteger(pageSize) || pageSize < 0) throw invalidParams("pageSize must not be negative");
    if (pageToken !== "" && !/^[1-9]\d{0,5}$/.test(pageToken)) throw invalidParams("pageToken is not one a ListTaskPushNotificationConfigs answer gave");
    const all = ((await this.session().listWebhooks(taskId)) as Webhook[]).filter((w) => isActiveConfigOf(w, taskId)).map((w) => configOf(w, taskId));
    const start = pageToken === "" ? 0 : Number(pageToken);
    const end = pageSize === 0 ? all.length : Math.min(all.length, start + pageSize);
    return { configs: all.slice(start, end), nextPageToken: end < all.length ? String(end) : "" };
  }

  /** Removes a config; no config of this id is no error (spec §3.1.10: idempotent). */
  async delete(taskId: string, configId: string): Promise<void> {
    await this.view(taskId);
    if (!CONFIG_ID.test(configId)) return;
    const webhookId = pushWebhookId(taskId, configId);
    const found = (await this.session().getWebhook(webhookId)) as RpcResult<Webhook>;
    if (!found.ok && found.error.code === "not_found") return;
    if (!found.ok) throw a2aErrorOf(found.error, taskId);
    if (found.value.kind !== "a2a_push" || found.value.task_id !== taskId) return;
    const deleted = (await this.session().deleteWebhook(webhookId)) as RpcResult<{ webhook_id: string }>;
    if (!deleted.ok && deleted.error.code !== "not_found") throw a2aErrorOf(deleted.error, taskId);
  }
}

/** A subscription the A2A client sees as a config of the task: an active push config of it (a disabled one is gone). */
function isActiveConfigOf(webhook: Webhook, taskId: string): boolean {
  return webhook.kind === "a2a_push" && webhook.task_id === taskId && webhook.status === "active" && webhook.webhook_id.startsWith(`${taskId}.`);
}

function notFound(taskId: string, configId: string): TaskNotFoundError {
  return new TaskNotFoundError({ message: `Push notification config ${configId.slice(0, 100)} not found for task ${taskId}`, metadata: { taskId, configId: configId.slice(0, 100) } });
}
