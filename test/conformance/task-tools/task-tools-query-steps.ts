/** @module Task tools (docs/model.md "Tools"): agent.task_query_steps: filters, paging, order and a worker's scope. */
import { describe, expect, it } from "vitest";
import { BASE, type Caller, type MakeDriver, POOLS, step, type StepFilter, type TaskRuntimeDriver } from "../drivers/driver.js";
import { accepted, created, holder, rejected, worker } from "../drivers/expect.js";

/** Registers the rules of agent.task_query_steps against the drivers `makeDriver` makes. */
export function registerQuerySteps(makeDriver: MakeDriver): void {
  describe("agent.task_query_steps", () => {
    /** The ids of a query's page. */
    const ids = async (d: TaskRuntimeDriver, by: Caller, filter: StepFilter = {}) => accepted(await d.querySteps(by, filter)).step_ids;

    it("the orchestrator can query any step of an active task", async () => {
      const d = await created(await makeDriver(), [step("a"), step("b", ["a"]), step("g", [], { worker_pool_id: "gpu" })]);
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "running" }));
      const page = accepted(await d.querySteps("orchestrator"));
      expect(page.step_ids).toEqual(["a", "b", "g"]);
      expect(page.statuses).toEqual(["running", "pending", "ready"]);
    });

    it("a terminal task answers queries read-only and takes no further step update", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      accepted(await d.task("fail", { reason: "stop" }));
      expect(await ids(d, "orchestrator", { include_terminal_steps: true })).toEqual(["a", "b", "c", "d"]);
      expect(await ids(d, "orchestrator")).toEqual([]);
      expect(await ids(d, w, { include_terminal_steps: true, statuses: ["failed"] })).toEqual(["a", "b", "c", "d"]);
      await rejected(d, () => d.updateStep(w, "a", { status: "completed" }), "task_terminal");
      await rejected(d, () => d.updateStep("orchestrator", "c", { status: "completed" }), "task_terminal");
      await rejected(d, () => d.claim(w, "c"), "task_terminal");
      await rejected(d, () => d.claimNext(w), "task_terminal");
      await rejected(d, () => d.progress(w, "a", { summary: "late" }), "task_terminal");
    });

    it("a worker can query the steps visible to it", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await worker(d);
      const page = accepted(await d.querySteps(w));
      expect(page.step_ids).toEqual(["a", "c", "d"]);
      expect(page.statuses.every((s) => s === "ready")).toBe(true);
    });

    it("filters by several statuses at once", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "c");
      accepted(await d.updateStep(w, "c", { status: "running" }));
      expect(await ids(d, "orchestrator", { statuses: ["pending", "running"] })).toEqual(["b", "c"]);
      expect(await ids(d, "orchestrator", { statuses: ["ready"] })).toEqual(["a", "d"]);
      expect(await ids(d, "orchestrator", { statuses: ["claimed", "blocked"] })).toEqual([]);
    });

    it("filters by worker_pool_id", async () => {
      const d = await created(await makeDriver(), [step("a"), step("g1", [], { worker_pool_id: "gpu" }), step("b", ["a"]), step("g2", ["a"], { worker_pool_id: "gpu" })]);
      expect(await ids(d, "orchestrator", { worker_pool_id: "gpu" })).toEqual(["g1", "g2"]);
      expect(await ids(d, "orchestrator", { worker_pool_id: "gpu", statuses: ["ready"] })).toEqual(["g1"]);
      expect(await ids(d, "orchestrator", { worker_pool_id: "default" })).toEqual(["a", "b"]);
      // A worker cannot widen its pool by asking for another one.
      const w = await worker(d);
      expect(await ids(d, w, { worker_pool_id: "gpu" })).toEqual([]);
    });

    it("filters by claimed_by_agent_id", async () => {
      const d = await created(await makeDriver(), BASE());
      const w1 = await holder(d, "a", { agent_id: "alice" });
      await holder(d, "c", { agent_id: "bob" });
      expect(await ids(d, "orchestrator", { claimed_by_agent_id: "alice" })).toEqual(["a"]);
      expect(await ids(d, "orchestrator", { claimed_by_agent_id: "bob" })).toEqual(["c"]);
      expect(await ids(d, w1, { claimed_by_agent_id: "alice", statuses: ["claimed"] })).toEqual(["a"]);
    });

    /** a completed, b failed, c cancelled, d ready. */
    const ended = async () => {
      const d = await created(await makeDriver(), [step("a"), step("b"), step("c"), step("d")]);
      const wa = await holder(d, "a");
      accepted(await d.updateStep(wa, "a", { status: "completed", result_summary: "a done" }));
      const w = await holder(d, "b");
      accepted(await d.updateStep(w, "b", { status: "failed" }));
      accepted(await d.patchTask([{ op: "cancel_step", step_id: "c" }]));
      return d;
    };

    it("leaves out completed, failed and cancelled steps by default", async () => {
      const d = await ended();
      const page = accepted(await d.querySteps("orchestrator"));
      expect(page.step_ids).toEqual(["d"]);
      expect(page.total).toBe(1);
    });

    it("returns terminal steps only with include_terminal_steps=true", async () => {
      const d = await ended();
      expect(await ids(d, "orchestrator", { include_terminal_steps: true })).toEqual(["a", "b", "c", "d"]);
      expect(await ids(d, "orchestrator", { include_terminal_steps: true, statuses: ["completed", "cancelled"] })).toEqual(["a", "c"]);
      const refused = await d.querySteps("orchestrator", { statuses: ["completed"] });
      expect(refused.ok ? "accepted" : refused.code).toBe("validation_error");
      expect(await ids(d, "orchestrator", { include_terminal_steps: false })).toEqual(["d"]);
    });

    it("pages with limit and offset, limit 50 by default", async () => {
      const d = await created(await makeDriver(), Array.from({ length: 60 }, (_, i) => step(`s${String(i).padStart(2, "0")}`)));
      const first = accepted(await d.querySteps("orchestrator"));
      expect(first).toMatchObject({ total: 60, limit: 50, offset: 0, next_offset: 50 });
      expect(first.step_ids).toHaveLength(50);
      expect(first.step_ids[0]).toBe("s00");
      const rest = accepted(await d.querySteps("orchestrator", { offset: 50 }));
      expect(rest).toMatchObject({ total: 60, limit: 50, offset: 50, next_offset: null });
      expect(rest.step_ids).toEqual(Array.from({ length: 10 }, (_, i) => `s${50 + i}`));
      const page = accepted(await d.querySteps("orchestrator", { limit: 3, offset: 7 }));
      expect(page.step_ids).toEqual(["s07", "s08", "s09"]);
      expect(page.next_offset).toBe(10);
    });

    it("orders by created_at ascending, never by status", async () => {
      const d = await created(await makeDriver(), [step("z"), step("m", ["z"]), step("a")]);
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "running" }));
      accepted(await d.patchTask([{ op: "add_step", step: step("b") }]));
      expect(await ids(d, "orchestrator")).toEqual(["z", "m", "a", "b"]);
      // A deleted and re-added step is created again, so it moves to the end.
      accepted(await d.patchTask([{ op: "delete_step", step_id: "m" }, { op: "add_step", step: step("m") }]));
      expect(await ids(d, "orchestrator")).toEqual(["z", "a", "b", "m"]);
      expect(await ids(d, "orchestrator", { statuses: ["ready"] })).toEqual(["z", "b", "m"]);
    });

    it("a worker's ready query lists only its pool's ready steps, with completed dependencies and no live lease", async () => {
      const d = await created(await makeDriver(), [step("a"), step("b", ["a"]), step("c"), step("g", [], { worker_pool_id: "gpu" }), step("e")]);
      const other = await holder(d, "c");
      const w = await worker(d);
      expect(await ids(d, w)).toEqual(["a", "e"]); // not b (dependency), c (leased), g (other pool)
      // Only ready steps, even when more are asked for by pool.
      expect(await ids(d, w, { worker_pool_id: "default" })).toEqual(["a", "e"]);
      accepted(await d.updateStep(other, "c", { status: "running" }));
      expect(await ids(d, w)).toEqual(["a", "e"]);
    });

    it("a worker's ready query returns 5 candidates by default", async () => {
      const d = await created(await makeDriver(), Array.from({ length: 8 }, (_, i) => step(`s${i}`)));
      const w = await worker(d);
      const page = accepted(await d.querySteps(w));
      expect(page).toMatchObject({ limit: 5, total: 8, next_offset: 5 });
      expect(page.step_ids).toEqual(["s0", "s1", "s2", "s3", "s4"]);
      expect(await ids(d, w, { limit: 10 })).toHaveLength(8);
      expect(accepted(await d.querySteps("orchestrator")).limit).toBe(50);
    });

    it("allowed_step_ids narrows what a worker run may query", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await worker(d, { allowed_step_ids: ["d", "b"] });
      expect(await ids(d, w)).toEqual(["d"]);
      expect(await ids(d, w, { statuses: ["pending", "ready"] })).toEqual(["b", "d"]);
    });

    it("allowed_step_ids is a hard scope: a step outside it can be neither queried nor claimed", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await worker(d, { allowed_step_ids: ["d"] });
      expect(await ids(d, w, { statuses: ["ready"] })).toEqual(["d"]);
      await rejected(d, () => d.claim(w, "a"), "permission_denied");
      expect(accepted(await d.claimNext(w)).step_id).toBe("d");
    });

    it("allowed_step_ids may name steps that are not ready: a ready query returns only the ready ones", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await worker(d, { allowed_step_ids: ["b", "c"] }); // b is pending: dispatch is still fine
      expect(await ids(d, w)).toEqual(["c"]);
    });

    it("no ready step within allowed_step_ids: claim-next answers no_step_claimed and writes nothing", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await worker(d, { allowed_step_ids: ["b"] });
      expect(await ids(d, w)).toEqual([]);
      const wal = await d.walTypes();
      expect(accepted(await d.claimNext(w))).toEqual({ step_id: null, reason: "no_ready_step" });
      expect(await d.walTypes()).toEqual(wal);
      expect((await d.view()).runs[w.run_id]).toMatchObject({ status: "active", claims_used: 0, current_step_id: null });
    });

    it("a worker with no filter sees the ready steps of its pool, five at a time", async () => {
      const d = await created(await makeDriver(), POOLS());
      const w = await worker(d);
      expect(accepted(await d.querySteps(w))).toMatchObject({ step_ids: ["r0", "r1", "r2", "r3", "r4"], total: 7, limit: 5, offset: 0, next_offset: 5 });
      expect(accepted(await d.querySteps(w, { offset: 5 }))).toMatchObject({ step_ids: ["r5", "r6"], total: 7, limit: 5, offset: 5, next_offset: null });
    });

    it("a worker sees only its allowed_step_ids within its pool", async () => {
      const d = await created(await makeDriver(), POOLS());
      const w = await worker(d, { allowed_step_ids: ["r3", "p", "g", "r1"] });
      expect(accepted(await d.querySteps(w)).step_ids).toEqual(["r1", "r3"]);
      const gpu = await worker(d, { worker_pool_id: "gpu" });
      expect(accepted(await d.querySteps(gpu)).step_ids).toEqual(["g"]);
    });

    it.each([
      ["no filter", {}, ["r0", "r2", "r3", "r4", "r5", "r6", "g", "p"]],
      ["status=pending", { statuses: ["pending"] }, ["p"]],
      ["a status list", { statuses: ["pending", "claimed"] }, ["r0", "p"]],
      ["worker_pool_id=gpu", { worker_pool_id: "gpu" }, ["g"]],
      ["claimed_by_agent_id", { claimed_by_agent_id: "w1" }, ["r0"]],
      ["include_terminal_steps=true", { include_terminal_steps: true, statuses: ["completed"] }, ["r1"]],
      ["limit and offset", { limit: 2, offset: 1 }, ["r2", "r3"]],
    ] as [string, StepFilter, string[]][])("the orchestrator's query honours %s", async (_name, filter, ids) => {
      const d = await created(await makeDriver(), POOLS());
      const w = await worker(d, { agent_id: "w1" });
      accepted(await d.claim(w, "r0"));
      accepted(await d.updateStep("orchestrator", "r1", { status: "completed" }));
      expect(accepted(await d.querySteps("orchestrator", filter)).step_ids).toEqual(ids);
    });
  });
}
