/**
 * @module Which roles may issue which command at all (docs/model.md): the check that runs before anything
 * else looks at a request, an idempotent replay included, and with it whether a worker's run (its token) is
 * still live. Finer rules (own claim, active run) stay in decide.
 */
import type { Command } from "../model/commands.js";
import type { Actor, ActorRole } from "./context.js";
import { type RuntimeError, runtimeError } from "../model/errors.js";
import { checkRunToken, checkScope } from "./guards.js";
import type { DagState } from "../model/state.js";

type Roles = readonly ActorRole[];
const ORCHESTRATOR: Roles = ["orchestrator"];
const WORKER: Roles = ["worker"];
const EITHER: Roles = ["orchestrator", "worker"];
const DECIDERS: Roles = ["orchestrator", "approver", "a2a_client"];
/** An A2A client submits work and may stop it; the orchestrator plans and runs it. */
const ORCHESTRATOR_OR_SUBMITTER: Roles = ["orchestrator", "a2a_client"];

/** The tool name and the roles of every command (`anyone`: no role or scope check); the system actor may issue any. */
export const COMMAND_ROLES: { readonly [K in Command["type"]]: { readonly tool: string; readonly roles: Roles | "anyone" } } = {
  create_task: { tool: "agent.task_create", roles: ORCHESTRATOR_OR_SUBMITTER },
  update_task: { tool: "agent.task_update", roles: ORCHESTRATOR },
  update_step: { tool: "agent.task_update_step", roles: EITHER },
  append_progress: { tool: "agent.task_progress", roles: EITHER },
  claim_step: { tool: "agent.task_claim_step", roles: WORKER },
  claim_next: { tool: "agent.task_claim_next", roles: WORKER },
  complete_task: { tool: "agent.task_complete", roles: ORCHESTRATOR },
  fail_task: { tool: "agent.task_fail", roles: ORCHESTRATOR },
  cancel_task: { tool: "agent.task_cancel", roles: ORCHESTRATOR_OR_SUBMITTER },
  block_task: { tool: "task_blocked", roles: ORCHESTRATOR },
  reopen_task: { tool: "task_reopened", roles: ORCHESTRATOR },
  dispatch_worker: { tool: "agent.dispatch_worker", roles: ORCHESTRATOR },
  finish_run: { tool: "finish_worker_run", roles: EITHER },
  cancel_run: { tool: "cancel_worker_run", roles: ORCHESTRATOR },
  pause_task: { tool: "agent.task_pause", roles: ORCHESTRATOR },
  resume_task: { tool: "agent.task_resume", roles: ORCHESTRATOR },
  archive_task: { tool: "agent.task_archive", roles: ORCHESTRATOR },
  request_action: { tool: "agent.request_action", roles: EITHER },
  respond_action: { tool: "agent.respond_action", roles: DECIDERS },
  // Anyone's read may trigger it; its events are recorded as the system's whoever asked.
  reconcile_leases: { tool: "lease reconciliation", roles: "anyone" },
  // The runtime's own records of its delegates' outbound calls: no token's role may send them.
  record_delegation: { tool: "delegation report", roles: [] },
  record_delivery: { tool: "delivery report", roles: [] },
  queue_webhook_deliveries: { tool: "webhook queue", roles: [] },
  record_webhook_tries: { tool: "webhook delivery report", roles: [] },
  retry_webhook_delivery: { tool: "webhook delivery retry", roles: [] },
  cancel_for_parent: { tool: "cancellation by the parent", roles: [] },
  // The session's task graph pushes blockers as the system; no agent role may.
  set_blockers: { tool: "set_blockers", roles: [] },
};

/**
 * May this actor issue this command against this task at all: its role (tool_not_available), its session and
 * task scope (permission_denied), and, for a worker, whether its run is still live (unauthorized, run_ended:
 * checkRunToken). An unknown type passes: decide answers validation_error. `state` is null for a create.
 */
export function authorize(state: DagState | null, actor: Actor, command: { readonly [field: string]: unknown }): RuntimeError | null {
  if (actor.role === "system") return null;
  const type = command.type;
  const rule = typeof type === "string" && Object.hasOwn(COMMAND_ROLES, type) ? COMMAND_ROLES[type as Command["type"]] : undefined;
  if (rule === undefined || rule.roles === "anyone") return null;
  if (!rule.roles.includes(actor.role)) {
    return runtimeError("tool_not_available", `${rule.tool} is not available to the ${actor.role} role`, { role: actor.role, tool: rule.tool });
  }
  const task = state?.task ?? null;
  return task === null ? null : (checkScope(task, actor) ?? checkRunToken(state!, actor, command));
}
