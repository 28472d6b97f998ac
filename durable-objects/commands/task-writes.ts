/** @module Task writes: which command each write path means, shared by the single routes and the batch route. */
import { z } from "zod";
import type { MintedToken } from "../session/session-tokens.js";
import { sha256DerivedId } from "../../src/lib/hash.js";
import {
  type AnyWriteAnswer as WriteAnswer,
  CancelRunBody,
  DispatchWorkerBody,
  FinishRunBody,
  ProgressBody,
  ReasonBody,
  RequestActionBody,
  RespondActionBody,
  UpdateStepBody,
  UpdateTaskBody,
} from "../../src/contract/index.js";
import type { RuntimeError, WorkerRun } from "../../src/core/index.js";
import { AppendProgressSchema, CancelRunSchema, ClaimStepSchema, FinishRunSchema, RequestActionSchema, RespondActionSchema, runtimeError, UpdateStepSchema } from "../../src/core/index.js";
import { type Env, readConfig } from "../shared/env.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import { validate } from "./command-json.js";
import { ApiError } from "../shared/http-errors.js";
import { EmptyBody } from "./command-schemas.js";

/** A write resolved to a core command. */
export interface ResolvedWrite {
  readonly command: Record<string, unknown>;
  readonly claimNext: boolean;
  readonly status: 200 | 201;
}

interface WriteRoute {
  readonly method: "POST" | "PATCH";
  /** Matches the path after `/v1/sessions/{sid}/tasks/{tid}`. */
  readonly pattern: RegExp;
  readonly body: z.ZodType;
  /**
   * The path's ids as the command's own schema checks them (`{ step_id }`, …): with the body checked by a schema
   * made from the same command schema, the built command is one decide need not parse again.
   */
  readonly params?: { readonly names: readonly string[]; readonly schema: z.ZodType };
  readonly status: 200 | 201;
  readonly build: (params: string[], body: Record<string, unknown>) => { command: Record<string, unknown>; claimNext?: boolean };
}

const LIFECYCLE: Record<string, string> = {
  complete: "complete_task",
  fail: "fail_task",
  cancel: "cancel_task",
  block: "block_task",
  reopen: "reopen_task",
  pause: "pause_task",
  resume: "resume_task",
  archive: "archive_task",
};
const SEGMENT = "([^/]+)";
/** A path id checked by its field's schema in the command (`step_id: IdSchema`, …). */
const pathIds = (fields: Record<string, z.ZodType>) => ({ names: Object.keys(fields), schema: z.strictObject(fields) });

/** Every task write, by method and path. */
const WRITES: readonly WriteRoute[] = [
  { method: "PATCH", pattern: /^$/, body: UpdateTaskBody, status: 200, build: (_m, b) => ({ command: { type: "update_task", ...b } }) },
  { method: "POST", pattern: /^\/(complete|fail|cancel|block|reopen|pause|resume|archive)$/, body: ReasonBody, status: 200, build: (m, b) => ({ command: { type: LIFECYCLE[m[0]!], ...b } }) },
  { method: "POST", pattern: /^\/workers$/, body: DispatchWorkerBody, status: 201, build: (_m, b) => ({ command: { type: "dispatch_worker", ...b } }) },
  { method: "POST", pattern: new RegExp(`^/runs/${SEGMENT}/finish$`), body: FinishRunBody, params: pathIds({ run_id: FinishRunSchema.shape.run_id }), status: 200, build: (m, b) => ({ command: { type: "finish_run", run_id: m[0], ...b } }) },
  { method: "POST", pattern: new RegExp(`^/runs/${SEGMENT}/cancel$`), body: CancelRunBody, params: pathIds({ run_id: CancelRunSchema.shape.run_id }), status: 200, build: (m, b) => ({ command: { type: "cancel_run", run_id: m[0], ...b } }) },
  { method: "POST", pattern: /^\/steps\/claim-next$/, body: EmptyBody, status: 200, build: () => ({ command: { type: "claim_next" } }) },
  { method: "POST", pattern: new RegExp(`^/steps/${SEGMENT}/claim$`), body: EmptyBody, params: pathIds({ step_id: ClaimStepSchema.shape.step_id }), status: 200, build: (m) => ({ command: { type: "claim_step", step_id: m[0] } }) },
  {
    method: "POST",
    pattern: new RegExp(`^/steps/${SEGMENT}/status$`),
    body: UpdateStepBody,
    params: pathIds({ step_id: UpdateStepSchema.shape.step_id }),
    status: 200,
    build: (m, b) => {
      const { claim_next: claimNext, ...fields } = b;
      return { command: { type: "update_step", step_id: m[0], ...fields }, claimNext: claimNext === true };
    },
  },
  { method: "POST", pattern: new RegExp(`^/steps/${SEGMENT}/progress$`), body: ProgressBody, params: pathIds({ step_id: AppendProgressSchema.shape.step_id.unwrap() }), status: 200, build: (m, b) => ({ command: { type: "append_progress", step_id: m[0], ...b } }) },
  { method: "POST", pattern: new RegExp(`^/steps/${SEGMENT}/actions$`), body: RequestActionBody, params: pathIds({ step_id: RequestActionSchema.shape.step_id.unwrap() }), status: 201, build: (m, b) => ({ command: { type: "request_action", step_id: m[0], ...b } }) },
  { method: "POST", pattern: /^\/actions$/, body: RequestActionBody, status: 201, build: (_m, b) => ({ command: { type: "request_action", ...b } }) },
  { method: "POST", pattern: new RegExp(`^/actions/${SEGMENT}/respond$`), body: RespondActionBody, params: pathIds({ action_id: RespondActionSchema.shape.action_id }), status: 200, build: (m, b) => ({ command: { type: "respond_action", action_id: m[0], ...b } }) },
];

/**
 * Resolves a write (method, path after the task prefix, parsed body) to its command; 404 or 400 otherwise. The
 * command is checked whole (its body and its path's ids, by schemas made from the core's command schemas) and is a
 * fixed point of CommandSchema, so the object decides it without parsing it again (`validated`).
 */
export function resolveWrite(method: string, rest: string, body: Record<string, unknown>): ResolvedWrite {
  for (const route of WRITES) {
    if (route.method !== method.toUpperCase()) continue;
    const match = route.pattern.exec(rest);
    if (match === null) continue;
    const params = match.slice(1).map(decodePathId);
    if (route.params !== undefined) validate(route.params.schema, Object.fromEntries(route.params.names.map((name, i) => [name, params[i]])));
    const built = route.build(params, validate(route.body, body) as Record<string, unknown>);
    return { command: built.command, claimNext: built.claimNext ?? false, status: route.status };
  }
  throw new ApiError(runtimeError("not_found", `no task write ${method.toUpperCase()} ${rest === "" ? "/" : rest}`));
}

/** A path id, percent-decoded; a malformed escape is the caller's bad request. */
function decodePathId(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ApiError(runtimeError("validation_error", "a path id has a malformed percent-escape", { segment: segment.slice(0, 200) }));
  }
}

/**
 * Adds a worker token to a dispatch answer: signing is async, so it happens here, after the commit. The session
 * mints it (so it is listed and can be revoked); it expires with the run's deadline plus a minute, or after
 * TOKEN_TTL_SECONDS, and never after `makerExp`, the expiry of the token that dispatched.
 */
export async function withWorkerToken(env: Env, sessionId: string, answer: WriteAnswer, makerExp: number | undefined): Promise<RpcResult<WriteAnswer>> {
  const run = answer.run as WorkerRun | undefined;
  if (run === undefined || typeof answer.run_id !== "string") return ok(answer);
  // A dispatch's answer carries the task summary even in a lean socket answer (idempotent-writes.ts `answer`).
  const task = answer.task!;
  const config = readConfig(env);
  const ttl = run.deadline_at === null ? config.tokenTtlSeconds : Math.max(60, Math.ceil((Date.parse(run.deadline_at) - Date.now()) / 1000) + 60);
  const session = env.SESSIONS.get(env.SESSIONS.idFromName(sessionId));
  const minted = (await session.mintToken(
    { role: "worker", sid: sessionId, tid: task.task_id, sub: run.agent_id, run: run.run_id, pool: run.worker_pool_id, allowed: run.allowed_step_ids },
    ttl,
    makerExp,
    await workerTokenId(sessionId, run.run_id),
  )) as RpcResult<MintedToken>;
  return minted.ok ? ok({ ...answer, ...minted.value }) : minted;
}

/**
 * The token id of a worker run: one per run, whatever the number of times its dispatch is answered (a retry mints
 * its token again), so a retried dispatch answers the same `token_id` and revoking it ends every copy.
 */
async function workerTokenId(sessionId: string, runId: string): Promise<string> {
  return `tok_${(await sha256DerivedId("worker-token", sessionId, runId)).slice(0, 26)}`;
}

/** The answer of a write as the HTTP layer returns it (worker token added for dispatches, never outliving `makerExp`). */
export async function finishAnswer(env: Env, sessionId: string, result: RpcResult<WriteAnswer>, makerExp: number | undefined): Promise<RpcResult<WriteAnswer>> {
  return result.ok ? withWorkerToken(env, sessionId, result.value, makerExp) : result;
}

/** Error of a batch command that never reached the task object. */
export function rejected(error: RuntimeError): RpcResult<WriteAnswer> {
  return err(error);
}
