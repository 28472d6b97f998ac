/**
 * Resolved actions through the service: the task object's memory keeps an answered action slim (no prompt, no
 * input_schema), and every read that hands the action out serves it whole from the WAL: the respond answer, GET
 * .../actions/{id}, the action list, GET .../tasks/{tid}, MCP agent.task_action and the socket's action.resolved
 * frame; also after the object restarts.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { CommitShell } from "../../durable-objects/task/commit-shell.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import { call, dispatch, newSession, newTask, step } from "../support/helpers.js";
import { connectMcp } from "../support/mcp-clients.js";
import { expectOk, taskStub } from "../support/support.js";
import { openSocket } from "../support/test-socket.js";

const PROMPT = "Which region should the report cover? ".repeat(50);
const SCHEMA = { type: "object", required: ["region"], properties: { region: { type: "string", enum: ["eu", "us"] } } };

/** The action as the task object's memory holds it. */
async function inMemory(sid: string, taskId: string, actionId: string): Promise<any> {
  return runInDurableObject(taskStub(sid, taskId), (o: TaskGraphObject) => structuredClone((o as unknown as { shell: CommitShell }).shell.state.actions.get(actionId)));
}

describe("a resolved action", () => {
  it("Should be slim in memory and whole in every read, also after a restart", async () => {
    const s = await newSession();
    const t = await newTask(s, "asks", [step("a")]);
    const w = await dispatch(s, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    const asked = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, { kind: "input", prompt: PROMPT, input_schema: SCHEMA }), 201);
    const id = asked.action_id;
    const socket = await openSocket(t, s.orch);
    const answered = expectOk(await call("POST", `${t}/actions/${id}/respond`, s.orch, { decision: "submitted", input: { region: "eu" } }));
    const whole = { action_id: id, status: "resolved", prompt: PROMPT, input_schema: SCHEMA, decision: "submitted", input: { region: "eu" } };
    expect(answered.action).toMatchObject(whole);
    expect((await socket.nextEvent()).action).toMatchObject(whole);
    socket.ws.close(1000);
    expect(await inMemory(s.sid, "asks", id)).toMatchObject({ status: "resolved", prompt: "", input_schema: null, input: { region: "eu" } });

    const reads = async () => {
      expect(expectOk(await call("GET", `${t}/actions/${id}`, s.orch)).action).toMatchObject(whole);
      expect(expectOk(await call("GET", `${t}/actions?status=resolved`, s.orch)).actions).toEqual([expect.objectContaining(whole)]);
      expect(expectOk(await call("GET", t, s.orch)).actions).toEqual([expect.objectContaining(whole)]);
      const mcp = await connectMcp(s.orch);
      try {
        expect((await mcp.callTool({ name: "agent.task_action", arguments: { task_id: "asks", action_id: id } })).structuredContent.action).toMatchObject(whole);
      } finally {
        await mcp.close();
      }
    };
    await reads();
    await evictDurableObject(taskStub(s.sid, "asks"));
    await reads();
    expect(await inMemory(s.sid, "asks", id)).toMatchObject({ prompt: "", input_schema: null });
  });
});
