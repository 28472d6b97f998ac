/**
 * @module Decisions on the task's place in the session's task graph: the blockers its `blocks` links name
 * (a `blocks` link from A to B puts A in B's `blocked_by`). The session owns the links; the task records the
 * blockers it was told of.
 */
import type { CommandOf } from "../model/commands.js";
import type { DecideContext, Decision } from "./context.js";
import { Emitter, systemActor } from "./context.js";
import { accept, acceptNothing } from "./decision.js";
import { type RuntimeError, runtimeError } from "../model/errors.js";
import type { DagState } from "../model/state.js";

/** The tasks that block this one and have not completed (empty: nothing holds it). */
export function blockedBy(state: DagState): readonly string[] {
  return state.task?.blocked_by ?? [];
}

/** task_not_dispatchable while blockers hold the task (no dispatch, no claim), else null. */
export function blockedRefusal(state: DagState): RuntimeError | null {
  const blockers = blockedBy(state);
  if (blockers.length === 0) return null;
  return runtimeError("task_not_dispatchable", `the task is blocked by ${blockers.length === 1 ? "task" : "tasks"} ${blockers.slice(0, 10).join(", ")} until they complete`, { blocked_by: [...blockers] });
}

/**
 * set_blockers: records the pushed blockers when the push is newer than the last one recorded; an older or
 * equal version (a re-sent push) writes nothing, so the session may re-send until it is acknowledged.
 */
export function decideSetBlockers(state: DagState, cmd: CommandOf<"set_blockers">, ctx: DecideContext): Decision {
  const task = state.task!;
  if (cmd.version <= task.blockers_version) return acceptNothing();
  const em = new Emitter(state, ctx, systemActor(task.session_id));
  em.emit("task_blockers_updated", null, { version: cmd.version, blocked_by: [...new Set(cmd.blocked_by)].sort() });
  return accept(em);
}
