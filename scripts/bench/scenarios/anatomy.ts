/** @module The batch anatomy: batch requests of fixed shapes, one request in flight, interleaved round by round, to split the server's time per batch into a fixed cost per request and a cost per command. */
import { type Client, stepsOf } from "../harness/http-client.js";
import { round, stats } from "../harness/meter.js";

/** The anatomy's shapes (each sent `rounds` times back to back, one request in flight) and what they imply: from the two progress shapes (same token, 32 and 256 commands) intercept and slope; then per complete command. */
export type BatchAnatomy = Awaited<ReturnType<typeof batchAnatomy>>;

/**
 * Batch requests of fixed shapes against one task each, interleaved round by round so that they see the same
 * load: 32 complete+claim_next commands of 32 workers with Idempotency-Keys (what the SDK sends) and without,
 * and 32 and 256 progress commands of one worker. The first rounds warm up and are dropped.
 */
export async function batchAnatomy(client: Client, adminToken: string, rounds: number) {
  const warm = 3;
  const session = await client.session(adminToken);
  const orch = session.orch;
  let key = 0;
  const setup = async (tid: string, steps: number, workers: number) => {
    const taskPath = (await client.task(session, tid, { title: tid, steps: stepsOf(steps, "compact") })).path;
    const ws: { token: string; current: string }[] = [];
    for (let i = 0; i < workers; i++) {
      const d = await client.must(201, "POST", `${taskPath}/workers`, orch, { agent_id: `${tid}-w${i}`, max_steps: Math.max(1, Math.ceil(steps / workers) + 1) });
      const c = await client.must(200, "POST", `${taskPath}/steps/claim-next`, d.body.token, {});
      ws.push({ token: d.body.token, current: c.body.step.step_id });
    }
    return { taskPath, ws };
  };
  const n = 32;
  const shapes: { shape: { commands: number; kind: "complete_claim_next" | "progress"; idempotency_keys: boolean; tokens: number }; target: Awaited<ReturnType<typeof setup>>; samples: number[] }[] = [];
  for (const idem of [true, false]) shapes.push({ shape: { commands: n, kind: "complete_claim_next", idempotency_keys: idem, tokens: n }, target: await setup(`anat-c${idem ? "k" : "n"}`, n * (rounds + 2), n), samples: [] });
  for (const size of [n, 256]) shapes.push({ shape: { commands: size, kind: "progress", idempotency_keys: true, tokens: 1 }, target: await setup(`anat-p${size}`, 1, 1), samples: [] });
  for (let r = 0; r < rounds; r++) {
    for (const s of shapes) {
      const { taskPath, ws } = s.target;
      const commands =
        s.shape.kind === "progress"
          ? Array.from({ length: s.shape.commands }, () => ({ token: ws[0]!.token, method: "POST", path: `${taskPath}/steps/${ws[0]!.current}/progress`, body: { phase: "bench" }, idempotency_key: `a${key++}` }))
          : ws.map((w) => ({ token: w.token, method: "POST", path: `${taskPath}/steps/${w.current}/status`, body: { status: "completed", result_summary: "done", claim_next: true }, ...(s.shape.idempotency_keys ? { idempotency_key: `a${key++}` } : {}) }));
      const a = await client.must(200, "POST", `${taskPath}/batch`, ws[0]!.token, { commands });
      const results = a.body.results as { ok: boolean; body: { next?: { step?: { step_id: string } } } }[];
      const bad = results.find((x) => !x.ok);
      if (bad !== undefined) throw new Error(`a ${s.shape.kind} command was refused: ${JSON.stringify(bad).slice(0, 300)}`);
      if (s.shape.kind === "complete_claim_next") {
        results.forEach((x, i) => {
          const next = x.body.next?.step?.step_id;
          if (next === undefined) throw new Error("a complete + claim_next command claimed nothing");
          ws[i]!.current = next;
        });
      }
      if (r >= warm) s.samples.push(a.ms);
    }
  }
  const out = shapes.map((s) => ({ ...s.shape, request: stats(s.samples) }));
  const p = (kind: "complete_claim_next" | "progress", commands: number, idem = true) => out.find((s) => s.kind === kind && s.commands === commands && s.idempotency_keys === idem)!.request.p50_ms;
  const slope = (p("progress", 256) - p("progress", n)) / (256 - n);
  const intercept = p("progress", n) - n * slope;
  const perComplete = (p("complete_claim_next", n, true) - intercept) / n;
  const perCompleteNoKey = (p("complete_claim_next", n, false) - intercept) / n;
  return {
    shapes: out,
    derived: { per_request_ms: round(intercept, 2), per_progress_command_ms: round(slope, 4), per_complete_command_ms: round(perComplete, 4), per_complete_command_no_key_ms: round(perCompleteNoKey, 4), idempotency_key_ms_per_command: round(perComplete - perCompleteNoKey, 4) },
  };
}

