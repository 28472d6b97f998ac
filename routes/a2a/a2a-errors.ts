/**
 * @module What each domain error code means to an A2A client: one table over every code, as STATUS_OF is for
 * HTTP, so a new code does not compile until it says which A2A error it is. A task the caller may not see is
 * TaskNotFoundError (-32001) whether it is unknown or someone else's; a refused argument is -32602; a change
 * to a task that has ended is UnsupportedOperationError (-32004); a counted cap is -32602 with reason
 * LIMIT_EXCEEDED and its details as metadata; every other code is -32603 with our own
 * message, nothing of the runtime's internals leaked. A method may answer a code more precisely than this table
 * (CancelTask answers task_terminal with TaskNotCancelableError, -32002).
 */
import { A2AError, RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import type { ErrorCode, RuntimeError } from "../../src/core/index.js";

/** -32602 with an ErrorInfo reason of ours (e.g. CONTEXT_MISMATCH) and string metadata. */
export function invalidParams(message: string, reason?: string, metadata?: Record<string, string>): A2AError {
  const e = new RequestMalformedError({ message, ...(metadata === undefined ? {} : { metadata }) });
  if (reason !== undefined) (e as { reason: string }).reason = reason;
  return e;
}

/** -32001 for a task the caller cannot see: unknown and someone else's look the same. */
export function taskNotFound(id: string): A2AError {
  return new TaskNotFoundError({ message: `Task not found: ${id.slice(0, 100)}`, metadata: { taskId: id.slice(0, 100) } });
}

/** A domain error of ours that means no A2A error: answered -32603 with its own message (ours, nothing leaked). */
export class RuntimeFault extends Error {}

/** Builds the A2A error a domain error means, for a call about `taskId`. */
type A2aErrorOf = (error: RuntimeError, taskId: string) => Error;

const hiddenTask: A2aErrorOf = (_error, taskId) => taskNotFound(taskId);
const badParams: A2aErrorOf = (error) => invalidParams(error.message);
const taskEnded: A2aErrorOf = (_error, taskId) => new UnsupportedOperationError({ message: `Task ${taskId} is in a terminal state`, metadata: { taskId } });
const alreadyAnswered: A2aErrorOf = (error, taskId) => new UnsupportedOperationError({ message: error.message, metadata: { taskId } });
/**
 * -32602 with reason LIMIT_EXCEEDED and the cap's {limit, value, setting} as ErrorInfo metadata: a counted cap is
 * the client's to respect (not a fault of ours, and a retry gets the same answer), and A2A has no error of its own for it.
 */
const capReached: A2aErrorOf = (error) => {
  const details = error.details ?? {};
  return invalidParams(error.message, "LIMIT_EXCEEDED", { limit: String(details.limit), value: String(details.value), setting: String(details.setting) });
};
/** -32603 with the code and our message (rate_limited, storage_error, internal_error with its incident id, …). */
const fault: A2aErrorOf = (error) => new RuntimeFault(`${error.code}: ${error.message}`);

/** The A2A error of every domain error code. */
export const A2A_ERROR_OF: Readonly<Record<ErrorCode, A2aErrorOf>> = {
  validation_error: badParams,
  unauthorized: fault,
  permission_denied: hiddenTask,
  tool_not_available: fault,
  not_found: hiddenTask,
  path_conflict: fault,
  schedule_conflict: fault,
  task_id_conflict: fault,
  dependency_cycle: fault,
  unknown_dependency: fault,
  duplicate_step: fault,
  step_has_dependents: fault,
  invalid_transition: fault,
  task_terminal: taskEnded,
  task_not_dispatchable: fault,
  step_already_claimed: fault,
  step_already_claimed_by_run: fault,
  task_not_completeable: fault,
  action_resolved: alreadyAnswered,
  payload_too_large: fault,
  limit_exceeded: capReached,
  idempotency_conflict: fault,
  storage_error: fault,
  internal_error: fault,
  rate_limited: fault,
};

/** A domain error of the task objects as the A2A error it means. */
export function a2aErrorOf(error: RuntimeError, taskId: string): Error {
  return A2A_ERROR_OF[error.code](error, taskId);
}
