/**
 * @module Archive over MCP: the orchestrator's agent.task_archive takes a terminal task out of agent.task_list, which
 * shows it again with include_archived; a live task's archive is refused invalid_transition.
 */
import { describe, expect, it } from "vitest";
import { call, newSession, newTask, step } from "../support/helpers.js";
import { connectMcp, errorCodeOf } from "../support/mcp-clients.js";
import { eventually, expectOk, uniqueId } from "../support/support.js";

describe("agent.task_archive and agent.task_list include_archived", () => {
  it("Should archive a terminal task and leave it out of agent.task_list unless include_archived", async () => {
    const s = await newSession();
    const live = uniqueId("live");
    const ended = uniqueId("ended");
    await newTask(s, live, [step("a")]);
    const path = await newTask(s, ended, [step("a")]);
    expectOk(await call("POST", `${path}/cancel`, s.orch, {}));
    const orch = await connectMcp(s.orch, "modern");
    try {
      expect(errorCodeOf(await orch.callTool({ name: "agent.task_archive", arguments: { task_id: live } }))).toBe("invalid_transition");
      const archived = await orch.callTool({ name: "agent.task_archive", arguments: { task_id: ended, reason: "tidy" } });
      expect(archived.isError).not.toBe(true);
      expect((archived.structuredContent as { event_ids: string[] }).event_ids).toHaveLength(1);
      const ids = async (args: Record<string, unknown>) =>
        ((await orch.callTool({ name: "agent.task_list", arguments: args })).structuredContent as { tasks: { task_id: string; status: string }[] }).tasks.map((t) => `${t.task_id}:${t.status}`);
      await eventually(async () => expect(await ids({ include_terminal: true, include_archived: true })).toEqual([`${live}:running`, `${ended}:archived`]));
      expect(await ids({ include_terminal: true })).toEqual([`${live}:running`]);
    } finally {
      await orch.close();
    }
  });
});
