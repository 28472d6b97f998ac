/**
 * @module The task record (docs/model.md "The task record"): every field create_task and the update_task patch op take is stored, returned
 * and cleared by null; acceptance's required_artifacts gate completion; started_at and last_error are the
 * runtime's facts; WALs from before these fields still replay.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseWalJsonl, rebuildIndex, replay, TASK_RECORD_FIELDS, taskView } from "../../../src/core/index.js";
import { GOLDEN_STOPPED_WAL_PATH } from "../../fixtures/golden-stopped-wal.js";
import { GOLDEN_WAL_PATH } from "../../fixtures/golden-wal.js";
import { Harness, orchestrator, step, T0 } from "../harness.js";
import { consistent, done, iso, rejectsAs, setStep, upd } from "./support.js";

/** A value for every task record field the orchestrator sets. */
const RECORD = {
  objective: "Ship the release",
  task_kind: "release",
  task_family: "engineering",
  visibility: "background",
  priority: 3,
  requested_by: "user_42",
  owner: "team_release",
  assignee: "agent_rel",
  scope: { repo: "core" },
  constraints: { budget_usd: 10 },
  task_profile: { model: "large" },
  acceptance: { criteria: "tests pass", required_artifacts: ["report.md"] },
  metadata: { origin: "rules" },
  thread_id: "thread_7",
  parent_task_id: "task_0",
  root_task_id: "task_root",
  default_retry_policy: { max_attempts: 2, initial_interval_ms: 1_000, backoff_coefficient: 2, max_interval_ms: 5_000 },
  input_refs: [{ kind: "file", uri: "r2://inputs/brief.pdf" }],
  relationships: [{ kind: "source_task", task_id: "task_earlier" }],
} as const;

describe("the task record's fields", () => {
  it("Should name every field the record schema holds in the test's record (so a new field gets a test)", () => {
    expect(Object.keys(RECORD).sort()).toEqual([...TASK_RECORD_FIELDS].sort());
  });

  it("Should store every field on create and return it in the task view", () => {
    const h = new Harness();
    h.create([step("a")], RECORD);
    expect(h.state.task).toMatchObject(RECORD);
    expect(taskView(h.state).task).toMatchObject(RECORD);
    consistent(h);
  });

  it("Should leave every field null when create does not set it", () => {
    const h = new Harness();
    h.create([step("a")]);
    for (const field of TASK_RECORD_FIELDS) expect(h.state.task![field], field).toBeNull();
  });

  it("Should change fields with the update_task op and clear them with null", () => {
    const h = new Harness();
    h.create([step("a")], RECORD);
    h.ok(upd({ op: "update_task", priority: 9, owner: "someone_else", scope: { repo: "web" }, visibility: "hidden" }));
    expect(h.state.task).toMatchObject({ priority: 9, owner: "someone_else", scope: { repo: "web" }, visibility: "hidden", objective: RECORD.objective });
    const cleared = Object.fromEntries(TASK_RECORD_FIELDS.map((f) => [f, null]));
    h.ok(upd({ op: "update_task", ...cleared }));
    for (const field of TASK_RECORD_FIELDS) expect(h.state.task![field], field).toBeNull();
    consistent(h);
  });

  it("Should take acceptance as a string, as its criteria, on create and on update", () => {
    const h = new Harness();
    h.create([step("a")], { acceptance: "it works" });
    expect(h.state.task!.acceptance).toEqual({ criteria: "it works" });
    h.ok(upd({ op: "update_task", acceptance: "it still works" }));
    expect(h.state.task!.acceptance).toEqual({ criteria: "it still works" });
    consistent(h);
  });

  it("Should refuse bad record values with validation_error and write nothing", () => {
    const h = new Harness();
    h.create([step("a")]);
    rejectsAs(h, upd({ op: "update_task", visibility: "public" }), orchestrator, "validation_error");
    rejectsAs(h, upd({ op: "update_task", priority: 1.5 }), orchestrator, "validation_error");
    rejectsAs(h, upd({ op: "update_task", scope: "everything" }), orchestrator, "validation_error");
    rejectsAs(h, upd({ op: "update_task", default_retry_policy: { max_attempts: 0, initial_interval_ms: 0, backoff_coefficient: 1, max_interval_ms: 0 } }), orchestrator, "validation_error");
  });
});

describe("acceptance's required artifacts", () => {
  it("Should refuse complete with task_not_completeable while a required artifact is not among the completed steps' artifacts", () => {
    const h = new Harness();
    h.create([step("a"), step("b")], { acceptance: { required_artifacts: ["report.md"] } });
    h.ok(setStep("a", "completed", { artifact_ids: ["notes.md"] }), h.claimWith("a"));
    h.ok(setStep("b", "completed", { artifact_ids: ["draft.md"] }), h.claimWith("b"));
    rejectsAs(h, { type: "complete_task" }, orchestrator, "task_not_completeable");
  });

  it("Should complete once a completed step produced every required artifact", () => {
    const h = new Harness();
    h.create([step("a"), step("b")], { acceptance: { required_artifacts: ["report.md"] } });
    h.ok(setStep("a", "completed", { artifact_ids: ["notes.md"] }), h.claimWith("a"));
    h.ok(setStep("b", "completed", { artifact_ids: ["report.md"] }), h.claimWith("b"));
    h.ok({ type: "complete_task" });
    expect(h.state.task!.status).toBe("completed");
  });
});

describe("facts the runtime records", () => {
  it("Should set started_at when the task first becomes running, and keep it", () => {
    const h = new Harness();
    h.create([step("a", ["gate"]), step("gate")].reverse());
    expect(h.state.task!.started_at).toBe(iso(T0));
    const h2 = new Harness();
    h2.create([]);
    expect(h2.state.task!.started_at).toBeNull();
    h2.now += 5_000;
    h2.ok(upd({ op: "add_step", step: step("a") }));
    expect(h2.state.task).toMatchObject({ status: "running", started_at: iso(T0 + 5_000) });
    h2.ok({ type: "block_task" });
    h2.now += 5_000;
    h2.ok({ type: "reopen_task" });
    expect(h2.state.task!.started_at).toBe(iso(T0 + 5_000));
  });

  it("Should set last_error from a worker's step failure", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a");
    const attempt = h.state.steps.get("a")!.current_attempt_id;
    h.now += 1_000;
    h.ok(setStep("a", "failed", { reason: "source_down", result_summary: "the API answered 503" }), w);
    expect(h.state.task!.last_error).toEqual({ code: "source_down", message: "the API answered 503", step_id: "a", attempt_id: attempt, at: iso(T0 + 1_000) });
    consistent(h);
  });

  it("Should set last_error from a lost lease", () => {
    const h = new Harness();
    h.create([step("a")], { step_lease_timeout_ms: 60_000 });
    h.claimWith("a");
    h.now += 60_000;
    h.ok({ type: "reconcile_leases" });
    expect(h.state.task!.last_error).toMatchObject({ code: "lease_expired", step_id: "a" });
  });
});

describe("WALs written before the record fields", () => {
  it.each([
    ["golden", GOLDEN_WAL_PATH],
    ["golden-stopped", GOLDEN_STOPPED_WAL_PATH],
  ])("Should replay the %s WAL with the new fields null and its indexes whole", (_, path) => {
    const state = replay(parseWalJsonl(readFileSync(path, "utf8")));
    for (const field of ["task_family", "visibility", "requested_by", "owner", "assignee", "scope", "constraints", "task_profile", "thread_id", "root_task_id", "default_retry_policy", "input_refs", "relationships", "origin"] as const) {
      expect(state.task![field], field).toBeNull();
    }
    for (const s of state.steps.values()) expect(s).toMatchObject({ retry_policy: null, retry_at: null });
    expect(state.actions.size).toBe(0);
    expect(rebuildIndex(state)).toEqual(state.index);
  });

  it("Should read an old string acceptance as its criteria", () => {
    const state = replay(parseWalJsonl(readFileSync(GOLDEN_WAL_PATH, "utf8")));
    expect(state.task!.acceptance).toEqual({ criteria: "release done" });
    expect(state.task!.started_at).not.toBeNull();
  });

  it("Should keep a current WAL's record through a JSONL round trip", () => {
    const h = new Harness();
    h.create([step("a")], RECORD);
    done(h, "a");
    const text = h.wal.map((e) => JSON.stringify(e)).join("\n");
    expect(replay(parseWalJsonl(text))).toEqual(h.state);
  });
});
