/**
 * @module Group commit, shared by its two transports: `POST .../batch` and the task's command socket. Each
 * command is authenticated with its own token and resolved like its single route; one that fails here gets
 * its error in place and never reaches the task object; the rest are decided in order and written in one
 * transaction by the object.
 */
import { actorOf, TOKEN_REFUSAL_MESSAGES, type TokenCheck } from "../shared/tokens.js";
import { admitToken } from "../shared/revocations.js";
import { type RuntimeError, runtimeError } from "../../src/core/index.js";
import { type Env, taskObjectName } from "../shared/env.js";
import type { AnyWriteAnswer as WriteAnswer, BatchResult } from "../../src/contract/index.js";
import type { RpcResult } from "../shared/rpc-result.js";
import type { BatchItem, TaskGraphRpc } from "../task/task-graph-rpc.js";
import { requestHash } from "../../src/lib/hash.js";
import { withoutActorFields } from "./command-json.js";
import { errorEnvelope, STATUS_OF, toRuntimeError } from "../shared/http-errors.js";
import type { BatchBody } from "./command-schemas.js";
import { finishAnswer, rejected, resolveWrite } from "./task-writes.js";
import type { z } from "zod";

/** The task object of `sid/tid`. */
export function taskStub(env: Env, sid: string, tid: string): DurableObjectStub<TaskGraphRpc> {
  return env.TASK_GRAPHS.get(env.TASK_GRAPHS.idFromName(taskObjectName(sid, tid)));
}

/** A command checked and resolved, with the status its single route answers a success with. */
interface PreparedCommand {
  readonly item: BatchItem;
  readonly status: 200 | 201;
  /** When the command's token expires (seconds): a token it mints (a dispatch's) expires no later. */
  readonly tokenExp: number;
}

/** The commands of a batch, each checked and resolved, or its error (it never reaches the task object). */
export type PreparedBatch = readonly (PreparedCommand | RuntimeError)[];

/** Runs a validated batch against the task `sid/tid` through its object's RPC: one result per command, in order. */
export async function runBatch(env: Env, sid: string, tid: string, commands: BatchCommands): Promise<BatchResult[]> {
  const prepared = await prepareBatch(env, sid, tid, commands);
  return settleBatch(env, sid, prepared, (items) => taskStub(env, sid, tid).executeBatch(items) as Promise<RpcResult<WriteAnswer>[]>);
}

/** Checks a command's token: its claims, or why it is refused (admitToken). */
export type TokenVerifier = (token: string) => Promise<TokenCheck>;

/** How a batch is prepared: who verifies its tokens, and whether its answers leave out the task summary. */
export interface PrepareOptions {
  /** Default: admitToken with the service's secret and the session's revocations. */
  readonly verify?: TokenVerifier;
  /** Answers without `task` (a socket frame unless it asks for `summary`); a batch request's are always full. */
  readonly lean?: boolean;
}

/**
 * Authenticates and resolves every command of a batch, in parallel. A token several commands share (a worker's
 * complete and claim, one worker host's commands) is verified once for the whole batch.
 */
export function prepareBatch(env: Env, sid: string, tid: string, commands: BatchCommands, options: PrepareOptions = {}): Promise<PreparedBatch> {
  const prefix = `/v1/sessions/${sid}/tasks/${tid}`;
  const verify = options.verify ?? ((token: string) => admitToken(env, token));
  const verifying = new Map<string, Promise<TokenCheck>>();
  const verifyOnce: TokenVerifier = (token) => {
    let claims = verifying.get(token);
    if (claims === undefined) verifying.set(token, (claims = verify(token)));
    return claims;
  };
  const lean = options.lean === true;
  return Promise.all(commands.map((command) => prepare(sid, tid, prefix, command, verifyOnce, lean)));
}

/** Executes the prepared commands that passed (all in one unit, by `execute`) and puts every result in place. */
export async function settleBatch(env: Env, sid: string, prepared: PreparedBatch, execute: (items: BatchItem[]) => Promise<RpcResult<WriteAnswer>[]>): Promise<BatchResult[]> {
  const items = prepared.filter((p): p is PreparedCommand => !("code" in p)).map((p) => p.item);
  const answers = items.length === 0 ? [] : await execute(items);
  let next = 0;
  return Promise.all(
    prepared.map(async (p) => {
      const result = "code" in p ? rejected(p) : await finishAnswer(env, sid, answers[next++]!, p.tokenExp);
      if (!result.ok) return { ok: false, status: STATUS_OF[result.error.code], body: errorEnvelope(result.error) };
      return { ok: true, status: "code" in p ? 200 : p.status, body: result.value };
    }),
  );
}

type BatchCommands = z.infer<typeof BatchBody>["commands"];

async function prepare(sid: string, tid: string, prefix: string, command: BatchCommands[number], verify: TokenVerifier, lean: boolean): Promise<PreparedCommand | RuntimeError> {
  try {
    const check = await verify(command.token);
    if (!check.ok) return runtimeError("unauthorized", `the command's token: ${TOKEN_REFUSAL_MESSAGES[check.reason].replace(/^the token /, "")}`, { reason: check.reason });
    const claims = check.claims;
    if (claims.role === "a2a_client") return runtimeError("tool_not_available", "an a2a_client token speaks A2A at /a2a only", { role: claims.role });
    const actor = actorOf(claims);
    if (actor.session_id !== sid || (actor.role === "worker" && actor.task_id !== tid)) return runtimeError("permission_denied", "the command's token is not in this task's scope");
    const path = command.path.split("?")[0]!;
    if (!path.startsWith(prefix)) return runtimeError("validation_error", `a batch command's path must be under ${prefix}`, { path: command.path });
    const body = command.body ?? {};
    const resolved = resolveWrite(command.method, path.slice(prefix.length), withoutActorFields(body));
    const idem = command.idempotency_key === undefined ? null : { key: command.idempotency_key, hash: requestHash(command.method.toUpperCase(), path, JSON.stringify(body)) };
    return { item: { actor, command: resolved.command, idem, claimNext: resolved.claimNext, lean, validated: true }, status: resolved.status, tokenExp: claims.exp };
  } catch (e) {
    return toRuntimeError(e);
  }
}
