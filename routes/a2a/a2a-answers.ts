/**
 * @module Which open action an A2A message answers, and the key that makes its answer happen once (docs/protocols/a2a.md,
 * "Answering INPUT_REQUIRED"). A message names the action in `metadata.actionId` (the id the task's status
 * message and history carry); without it, it answers the task's only open action, and is refused when several are
 * open, so it never answers one the client was not shown. Its `messageId` is the Idempotency-Key of the answer.
 */
import type { Message } from "@a2a-js/sdk";
import { A2AError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import type { Action } from "../../src/core/index.js";
import { requestHash, sha256DerivedId } from "../../src/lib/hash.js";
import type { Idempotency } from "../../durable-objects/task/storage/idempotency-store.js";
import { invalidParams } from "./a2a-errors.js";

/** Most open action ids an ACTION_ID_REQUIRED refusal lists (the task's history lists them all). */
export const LISTED_OPEN_ACTIONS = 20;

/**
 * The Idempotency-Key a message's messageId is, the same for a message that creates a task and one that answers
 * it (so a messageId reused for another message is refused, not applied twice); a long messageId by its digest.
 */
export async function messageKeyOf(messageId: string): Promise<string> {
  return messageId.length <= 200 ? `a2a:${messageId}` : `a2a:#${await sha256DerivedId("A2A", "messageId", messageId)}`;
}

/** The action id a message names in `metadata.actionId`; undefined when it names none; -32602 when it is not a non-empty string. */
export function namedActionIdOf(message: Message): string | undefined {
  const named: unknown = message.metadata?.actionId;
  if (named === undefined || named === null) return undefined;
  if (typeof named !== "string" || named === "") throw invalidParams("message.metadata.actionId must be the id of the action answered (a non-empty string)");
  return named;
}

/**
 * The Idempotency-Key and request hash of an answer: keyed by the messageId, hashed over what the answer is made of
 * (the task, the action the message names, its parts), not over the action a message naming none happened to answer,
 * so its retry matches the first send whatever is open by then.
 */
export async function answerIdempotencyOf(message: Message, named: string | undefined): Promise<Idempotency> {
  const made = JSON.stringify({ taskId: message.taskId, actionId: named ?? null, parts: message.parts.map((p) => p.content ?? null) });
  return { key: await messageKeyOf(message.messageId), hash: requestHash("POST", "a2a:SendMessage:answer", made) };
}

/** -32004 with reason ACTION_NOT_OPEN: the named action is answered, expired, withdrawn, or not one of this task's. */
export function actionNotOpen(taskId: string, actionId: string): A2AError {
  const e = new UnsupportedOperationError({
    message: `Action ${actionId.slice(0, 100)} is not open on task ${taskId}: it was answered, expired or withdrawn, or is not this task's`,
    metadata: { taskId, actionId: actionId.slice(0, 100) },
  });
  (e as { reason: string }).reason = "ACTION_NOT_OPEN";
  return e;
}

/** -32602 with reason ACTION_ID_REQUIRED: `total` actions are open (the oldest of them `open`) and the message names none. */
export function actionIdRequired(taskId: string, open: readonly Pick<Action, "action_id">[], total: number): A2AError {
  const ids = open.slice(0, LISTED_OPEN_ACTIONS).map((a) => a.action_id);
  return invalidParams(`${total} actions are open on task ${taskId}: name the one answered in message.metadata.actionId`, "ACTION_ID_REQUIRED", {
    taskId,
    openActionIds: ids.join(","),
  });
}

/** -32602 with reason MESSAGE_ID_REUSED: the messageId was sent before with another message. */
export function messageIdReused(messageId: string): A2AError {
  return invalidParams("message.messageId was already sent with another message: use a new messageId for a new message", "MESSAGE_ID_REUSED", { messageId: messageId.slice(0, 200) });
}
