/**
 * @module Validated once: a write route checks its command (the body and the path's ids, by schemas made from the
 * core's command schemas) and the task object then decides it without parsing it again. That is sound only if
 * every command resolveWrite accepts is one CommandSchema accepts and gives back unchanged, and it is no stricter
 * than before only if what resolveWrite refuses CommandSchema refuses too. fast-check generates write requests
 * around valid ones (every write route, fields dropped, replaced and added, path ids good, bad and badly encoded).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { resolveWrite } from "../../durable-objects/commands/task-writes.js";
import { ApiError } from "../../durable-objects/shared/http-errors.js";
import { CommandSchema } from "../../src/core/index.js";
import { call, dispatch, newSession, newTask, step } from "../support/helpers.js";
import { expectError } from "../support/support.js";

/** Every task write: method, path after the task prefix (`{id}` for a path id), command type, path id field, valid bodies. */
const WRITES: readonly { method: string; path: string; type: string; id?: string; bodies: Record<string, unknown>[] }[] = [
  { method: "PATCH", path: "", type: "update_task", bodies: [{ ops: [{ op: "update_task", title: "T", acceptance: "it works" }] }, { ops: [{ op: "add_step", step: { step_id: "n1", title: "N" } }, { op: "update_step", step_id: "a", fields: { title: "x", required: false } }] }] },
  ...["complete", "fail", "cancel", "block", "reopen", "pause", "resume", "archive"].map((verb) => ({ method: "POST", path: `/${verb}`, type: `${verb}_task`, bodies: [{}, { reason: "because" }] })),
  { method: "POST", path: "/workers", type: "dispatch_worker", bodies: [{}, { agent_id: "w", max_steps: 3, timeout_ms: 60_000, allowed_step_ids: ["a"], worker_pool_id: "gpu" }] },
  { method: "POST", path: "/runs/{id}/finish", type: "finish_run", id: "run_id", bodies: [{ outcome: "finished" }, { outcome: "timeout", result: { a: [1, "x"] } }] },
  { method: "POST", path: "/runs/{id}/cancel", type: "cancel_run", id: "run_id", bodies: [{}, { reason: "stop" }] },
  { method: "POST", path: "/steps/claim-next", type: "claim_next", bodies: [{}] },
  { method: "POST", path: "/steps/{id}/claim", type: "claim_step", id: "step_id", bodies: [{}] },
  { method: "POST", path: "/steps/{id}/status", type: "update_step", id: "step_id", bodies: [{ status: "completed", result_summary: "done", claim_next: true }, { status: "failed", reason: "x", artifact_ids: ["a1"] }] },
  { method: "POST", path: "/steps/{id}/progress", type: "append_progress", id: "step_id", bodies: [{ phase: "p", counters: { a: 1 }, output_refs: ["x"], summary: "s" }] },
  { method: "POST", path: "/steps/{id}/actions", type: "request_action", id: "step_id", bodies: [{ kind: "approval", prompt: "ok?" }, { kind: "input", prompt: "x", input_schema: { type: "object" }, timeout_ms: 5_000 }] },
  { method: "POST", path: "/actions", type: "request_action", bodies: [{ kind: "approval", prompt: "ok?" }] },
  { method: "POST", path: "/actions/{id}/respond", type: "respond_action", id: "action_id", bodies: [{ decision: "approved" }, { decision: "submitted", input: { a: 1 }, comment: "c" }] },
];

const KEYS = ["reason", "title", "summary", "status", "result_summary", "artifact_ids", "phase", "counters", "output_refs", "agent_id", "worker_pool_id", "allowed_step_ids", "timeout_ms", "max_steps", "outcome", "result", "kind", "prompt", "input_schema", "decision", "input", "comment", "claim_next", "ops", "type", "step_id", "run_id", "action_id", "acceptance", "extra"];

const value: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, 999, 1_000, 86_400_000, 7 * 86_400_000 + 1, "", " ", "a", "x".repeat(129), "x".repeat(70_000), "completed", "claimed", "ready", "exploded", "finished", "approved", "approval", "input", [], [""], ["a", "a"], {}),
  fc.string({ maxLength: 6 }),
  fc.integer({ min: -5, max: 20_000 }),
  fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.oneof(fc.integer(), fc.string({ maxLength: 3 })), { maxKeys: 2 }),
  fc.constantFrom([{ op: "update_task", acceptance: { criteria: "c" } }], [{ op: "update_task", acceptance: 5 }], [{ op: "delete_step", step_id: "" }], [{ op: "nope" }]),
);

/** A path id as sent: good ones, bad ones (empty once decoded, too long, odd characters) and malformed escapes. */
const pathId: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom("a", "s00001", "run_01jq", "act_1", "x".repeat(128), "x".repeat(129), "x".repeat(300), "%20", "%E2%9C%93", "%E0%A4%A", "%", "a%2Fb"),
  fc.string({ minLength: 1, maxLength: 8 }).map(encodeURIComponent),
);

const mutation = fc.oneof(
  fc.record({ kind: fc.constant("drop" as const), key: fc.constantFrom(...KEYS) }),
  fc.record({ kind: fc.constant("set" as const), key: fc.constantFrom(...KEYS), value }),
);

const request = fc.record({
  write: fc.nat(WRITES.length - 1),
  base: fc.nat(1),
  id: pathId,
  mutations: fc.array(mutation, { maxLength: 3 }),
});

describe("Validated once: resolveWrite's commands are CommandSchema's fixed points", () => {
  it("Should accept only commands CommandSchema accepts unchanged, and refuse only what CommandSchema refuses", () => {
    const seen = { accepted: 0, refused: 0 };
    fc.assert(
      fc.property(request, ({ write, base, id, mutations }) => {
        const w = WRITES[write]!;
        const body: Record<string, unknown> = structuredClone(w.bodies[base % w.bodies.length]!);
        for (const m of mutations) {
          if (m.kind === "drop") delete body[m.key];
          else body[m.key] = m.value;
        }
        const rest = w.path.replace("{id}", id);
        let resolved: ReturnType<typeof resolveWrite> | null = null;
        try {
          resolved = resolveWrite(w.method, rest, body);
        } catch (e) {
          expect(e).toBeInstanceOf(ApiError);
          expect((e as ApiError).error.code).toBe("validation_error");
        }
        if (resolved !== null) {
          seen.accepted++;
          expect(resolved.command.type).toBe(w.type);
          const again = CommandSchema.safeParse(resolved.command);
          expect(again.success).toBe(true);
          expect(again.data).toStrictEqual(resolved.command);
          return;
        }
        seen.refused++;
        // What the object was sent before: the command built from the raw body, parsed by decide. A claim_next that
        // is not a boolean, a path id that is not even well-formed, or a body naming the command's type or an id
        // (the route's to set, from its path: a body never carries them) never reached it.
        if (body.claim_next !== undefined && typeof body.claim_next !== "boolean") return;
        if (["type", "step_id", "run_id", "action_id"].some((k) => k in body)) return;
        let decoded: string;
        try {
          decoded = decodeURIComponent(id);
        } catch {
          return;
        }
        // claim_next is the status route's own flag, not the command's; any other route's body may not carry it.
        const { claim_next: _claimNext, ...others } = body;
        const fields = w.type === "update_step" ? others : body;
        const raw = { type: w.type, ...(w.id === undefined ? {} : { [w.id]: decoded }), ...fields };
        expect(CommandSchema.safeParse(raw).success).toBe(false);
      }),
      { numRuns: 3_000 },
    );
    // Both sides were explored, not one.
    expect(seen.accepted).toBeGreaterThan(300);
    expect(seen.refused).toBeGreaterThan(300);
  });

  it("Should refuse a path id its command's schema refuses at the route, as decide did: 400 validation_error, not 404", async () => {
    const s = await newSession();
    const t = await newTask(s, "vo", [step("a")]);
    const long = "x".repeat(300);
    expectError(await call("POST", `${t}/steps/${long}/status`, s.orch, { status: "completed" }), 400, "validation_error");
    const w = await dispatch(s, t, { agent_id: "w1" });
    expectError(await call("POST", `${t}/steps/%E0%A4%A/claim`, w.token, {}), 400, "validation_error");
    expectError(await call("POST", `${t}/actions/${"y".repeat(129)}/respond`, s.orch, { decision: "approved" }), 400, "validation_error");
  });
});
