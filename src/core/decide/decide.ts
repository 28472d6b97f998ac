/**
 * @module `decide(state, command, ctx)`: validates a command against the DAG and returns every WAL event it
 * causes, cascades included, or one error. Pure: it never changes `state`; the caller appends the events and
 * then applies them.
 */
import { authorize } from "./authorize.js";
import type { Command } from "../model/commands.js";
import { CommandSchema } from "../schemas/commands.js";
import type { DecideContext, Decision } from "./context.js";
import { decideCreateTask } from "./decide-create-task.js";
import { decideUpdateTask } from "./decide-update-task.js";
import { decideRequestAction, decideRespondAction, withdrawEndedActions } from "./decide-actions.js";
import { decideRecordDelegation, decideRecordDelivery, followUpDelegations } from "./decide-delegation.js";
import { decideArchiveTask, decideBackToPending, decideBlockTask, decideCancelForParent, decideCompleteTask, decidePauseTask, decideStopTask } from "./decide-lifecycle.js";
import { decideCancelRun, decideDispatchWorker, decideFinishRun, decideReconcileLeases } from "./decide-runs.js";
import { decideAppendProgress, decideClaimNext, decideClaimStep, decideUpdateStep } from "./decide-steps.js";
import { decideSetBlockers } from "./decide-links.js";
import { decideQueueWebhookDeliveries, decideRecordWebhookTries, decideRetryWebhookDelivery } from "./decide-webhooks.js";
import { refuse } from "./decision.js";
import { runtimeError } from "../model/errors.js";
import type { DagState } from "../model/state.js";

type Deciders = { [K in Command["type"]]: (s: DagState, c: Extract<Command, { type: K }>, ctx: DecideContext) => Decision };

const deciders: Deciders = {
  create_task: decideCreateTask,
  update_task: decideUpdateTask,
  update_step: decideUpdateStep,
  append_progress: decideAppendProgress,
  claim_step: decideClaimStep,
  claim_next: decideClaimNext,
  complete_task: decideCompleteTask,
  fail_task: decideStopTask,
  cancel_task: decideStopTask,
  block_task: decideBlockTask,
  reopen_task: decideBackToPending,
  dispatch_worker: decideDispatchWorker,
  finish_run: decideFinishRun,
  cancel_run: decideCancelRun,
  pause_task: decidePauseTask,
  resume_task: decideBackToPending,
  archive_task: decideArchiveTask,
  request_action: decideRequestAction,
  respond_action: decideRespondAction,
  reconcile_leases: decideReconcileLeases,
  record_delegation: decideRecordDelegation,
  record_delivery: decideRecordDelivery,
  cancel_for_parent: decideCancelForParent,
  set_blockers: decideSetBlockers,
  queue_webhook_deliveries: decideQueueWebhookDeliveries,
  record_webhook_tries: decideRecordWebhookTries,
  retry_webhook_delivery: decideRetryWebhookDelivery,
};

/** Formats zod issues as one readable line plus structured details. */
function describeIssues(issues: readonly { path: readonly PropertyKey[]; message: string }[]) {
  const list = issues.slice(0, 20).map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
  return { message: list.map((i) => (i.path === "" ? i.message : `${i.path}: ${i.message}`)).join("; "), details: { issues: list } };
}

/** Decides a command: all its events, or exactly one error and no events. */
export function decide(state: DagState, command: unknown, ctx: DecideContext): Decision {
  const parsed = CommandSchema.safeParse(command);
  if (!parsed.success) {
    const { message, details } = describeIssues(parsed.error.issues);
    return refuse(runtimeError("validation_error", message, details));
  }
  return decideParsed(state, parsed.data, ctx);
}

/**
 * Decides a command that is already CommandSchema's output (a write route validated it against the same schemas
 * and CommandSchema would give it back unchanged): `decide` without parsing it a second time.
 */
export function decideParsed(state: DagState, cmd: Command, ctx: DecideContext): Decision {
  if (cmd.type !== "create_task" && state.task === null) return refuse(runtimeError("not_found", "no such task"));
  const denied = authorize(state, ctx.actor, cmd);
  if (denied !== null) return refuse(denied);
  const decision = (deciders[cmd.type] as (s: DagState, c: Command, ctx: DecideContext) => Decision)(state, cmd, ctx);
  if (decision.ok) {
    withdrawEndedActions(state, decision.events, ctx);
    followUpDelegations(state, decision.events, ctx);
  }
  return decision;
}
