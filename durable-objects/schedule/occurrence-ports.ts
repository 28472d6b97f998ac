/**
 * @module The calls a schedule object makes to its occurrences' task objects: create the task (with its derived id),
 * cancel the previous one (cancel_previous), archive an ended one (archive_after_days), read a task's index entry (its end), and read a task's input refs (is
 * the task that holds an occurrence's id the one this schedule created?). A field of the object, so the fault tests
 * can fail a call once.
 */
import type { AnyWriteAnswer as WriteAnswer, IndexEntry } from "../../src/contract/index.js";
import { type Actor, runtimeError } from "../../src/core/index.js";
import { type Env, taskObjectName } from "../shared/env.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";

export interface OccurrencePorts {
  createTask(actor: Actor, body: Record<string, unknown>): Promise<RpcResult<WriteAnswer>>;
  cancelTask(actor: Actor, taskId: string, reason: string): Promise<RpcResult<WriteAnswer>>;
  archiveTask(actor: Actor, taskId: string): Promise<RpcResult<WriteAnswer>>;
  taskEntry(sessionId: string, taskId: string): Promise<RpcResult<IndexEntry | null>>;
  taskInputRefs(actor: Actor, taskId: string): Promise<RpcResult<unknown[] | null>>;
}

/** The ports bound to the Worker's task objects. */
export function taskObjectPorts(env: Env): OccurrencePorts {
  const stub = (sessionId: string, taskId: string) => env.TASK_GRAPHS.get(env.TASK_GRAPHS.idFromName(taskObjectName(sessionId, taskId)));
  return {
    async createTask(actor, body) {
      return (await stub(actor.session_id, String(body.task_id)).createTask(actor, body, null)) as RpcResult<WriteAnswer>;
    },
    async cancelTask(actor, taskId, reason) {
      return (await stub(actor.session_id, taskId).execute(actor, { type: "cancel_task", reason }, null)) as RpcResult<WriteAnswer>;
    },
    async archiveTask(actor, taskId) {
      return (await stub(actor.session_id, taskId).execute(actor, { type: "archive_task" }, null)) as RpcResult<WriteAnswer>;
    },
    async taskEntry(sessionId, taskId) {
      return (await stub(sessionId, taskId).indexEntry()) as RpcResult<IndexEntry | null>;
    },
    async taskInputRefs(actor, taskId) {
      // One record is enough: the answer's `task` is whole on every page.
      const read = (await stub(actor.session_id, taskId).getTask(actor, { limit: 1 })) as RpcResult<string | ReadableStream<Uint8Array>>;
      if (!read.ok) return read.error.code === "not_found" ? ok(null) : err(read.error);
      const text = typeof read.value === "string" ? read.value : await new Response(read.value).text();
      try {
        const task = (JSON.parse(text) as { task?: { input_refs?: unknown[] | null } }).task;
        return ok(task?.input_refs ?? []);
      } catch (e) {
        return err(runtimeError("storage_error", "the task's answer could not be read", { cause: e instanceof Error ? e.message : String(e) }));
      }
    },
  };
}
