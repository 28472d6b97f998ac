/**
 * @module Work submitted by an A2A client (docs/protocols/a2a.md): it creates a task with no
 * steps that the session's orchestrator plans, is named its requester whatever it says, reaches only the tasks it
 * submitted (others are not_found: it cannot learn they exist), may cancel and answer actions on its own, and
 * nothing else.
 */
import { describe, expect, it } from "vitest";
import { type Actor, normalizedTaskStatus, replay, taskView } from "../../../../src/core/index.js";
import { Harness, orchestrator, SESSION, step, TASK } from "../../harness.js";
import { consistent, rejectsAs, setStep, upd } from "../support.js";

const client: Actor = { role: "a2a_client", session_id: SESSION, agent_id: "partner-agent", run_id: null };
const otherClient: Actor = { role: "a2a_client", session_id: SESSION, agent_id: "someone-else", run_id: null };

/** A create as the A2A facade sends it: the message's text as objective, its context as thread, no steps. */
const submit = (extra: Record<string, unknown> = {}) => ({
  type: "create_task",
  task_id: TASK,
  wal_name: "a2a-task",
  title: "Summarise the quarter",
  summary: "",
  objective: "Summarise the quarter's sales",
  thread_id: "ctx-1",
  input_refs: [{ kind: "data", data: { quarter: "Q3" } }],
  steps: [],
  ...extra,
});

/** A task the client submitted. */
function submitted(): Harness {
  const h = new Harness();
  h.ok(submit(), client);
  return h;
}

describe("a task submitted by an A2A client", () => {
  it("Should create the task with no steps, pending, with the client as its origin and requester", () => {
    const h = submitted();
    expect(h.state.task).toMatchObject({
      status: "pending",
      origin: { protocol: "a2a", client_agent_id: "partner-agent" },
      requested_by: "partner-agent",
      objective: "Summarise the quarter's sales",
      thread_id: "ctx-1",
      input_refs: [{ kind: "data", data: { quarter: "Q3" } }],
      created_by_agent_id: "partner-agent",
    });
    expect(h.state.steps.size).toBe(0);
    // Normalized queued: waiting to be planned and started (A2A: TASK_STATE_SUBMITTED).
    expect(normalizedTaskStatus(h.state)).toBe("queued");
    expect(h.wal.map((e) => e.event_type)).toEqual(["task_created"]);
    consistent(h);
  });

  it("Should name the token's client as requester and origin whatever the command says", () => {
    const h = new Harness();
    h.ok(submit({ requested_by: "the-ceo" }), client);
    expect(h.state.task).toMatchObject({ requested_by: "partner-agent", origin: { client_agent_id: "partner-agent" } });
  });

  it("Should refuse a submitted task that brings its own steps: the orchestrator plans them", () => {
    const h = new Harness();
    rejectsAs(h, submit({ steps: [step("a")] }), client, "validation_error");
    expect(h.state.task).toBeNull();
  });

  it("Should give a task the orchestrator creates no origin", () => {
    const h = new Harness();
    h.create([step("a")]);
    expect(h.state.task!.origin).toBeNull();
  });

  it("Should let the orchestrator plan it: steps added by task_update make it run", () => {
    const h = submitted();
    h.ok(upd({ op: "add_step", step: step("draft") }));
    expect(h.state.task!.status).toBe("running");
    expect(h.status("draft")).toBe("ready");
    consistent(h);
  });

  it("Should replay to the same state, origin included", () => {
    const h = submitted();
    h.ok(upd({ op: "add_step", step: step("draft") }));
    expect(replay(h.wal)).toEqual(h.state);
  });
});

describe("what an A2A client may do", () => {
  it("Should let it cancel its own task", () => {
    const h = submitted();
    h.ok({ type: "cancel_task", reason: "no longer needed" }, client);
    expect(h.state.task!.status).toBe("cancelled");
  });

  it("Should let it answer an open action on its own task", () => {
    const h = submitted();
    const asked = h.ok({ type: "request_action", kind: "input", prompt: "Which region?" });
    const actionId = (asked.value as { action_id: string }).action_id;
    h.ok({ type: "respond_action", action_id: actionId, decision: "submitted", input: { region: "EMEA" } }, client);
    expect(h.state.actions.get(actionId)).toMatchObject({ status: "resolved", decision: "submitted", resolved_by: { agent_id: "partner-agent", role: "a2a_client" } });
  });

  it.each([
    ["update_task", upd({ op: "add_step", step: step("x") })],
    ["dispatch_worker", { type: "dispatch_worker" }],
    ["complete_task", { type: "complete_task" }],
    ["fail_task", { type: "fail_task" }],
    ["pause_task", { type: "pause_task" }],
    ["request_action", { type: "request_action", kind: "approval", prompt: "?" }],
    ["claim_next", { type: "claim_next" }],
  ])("Should refuse %s with tool_not_available", (_name, command) => {
    const h = submitted();
    const before = h.wal.length;
    rejectsAs(h, command, client, "tool_not_available");
    expect(h.wal.length).toBe(before);
  });

  it("Should answer another client's task as not found, for reads and writes alike", () => {
    const h = submitted();
    rejectsAs(h, { type: "cancel_task" }, otherClient, "not_found");
    const asked = h.ok({ type: "request_action", kind: "approval", prompt: "Go?" });
    rejectsAs(h, { type: "respond_action", action_id: (asked.value as { action_id: string }).action_id, decision: "approved" }, otherClient, "not_found");
    expect(h.state.task!.status).toBe("pending");
  });

  it("Should answer a task the orchestrator created as not found too", () => {
    const h = new Harness();
    h.create([step("a")]);
    rejectsAs(h, { type: "cancel_task" }, client, "not_found");
    h.ok(setStep("a", "blocked", { reason: "x" }));
    expect(taskView(h.state).task.origin).toBeNull();
  });

  it("Should let the orchestrator run the submitted task as its own", () => {
    const h = submitted();
    h.ok(upd({ op: "add_step", step: step("draft") }), orchestrator);
    h.complete("draft");
    h.ok({ type: "complete_task" }, orchestrator);
    expect(h.state.task!.status).toBe("completed");
  });
});
